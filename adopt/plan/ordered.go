package plan

import "runtime"

// orderBlock is how many list items one encoding job takes.
const orderBlock = 128

// ordered encodes items 0..n-1 in blocks of orderBlock on every core and
// hands the blocks' bytes to put in item order: encoding a 100,000-object
// plan is CPU work that need not wait for the writer. At most two blocks
// per core are in flight, so memory stays a few blocks' worth. The first
// error wins; later blocks are still drained, never put.
func ordered(n int, enc func(lo, hi int) ([]byte, error), put func([]byte) error) error {
	type result struct {
		b   []byte
		err error
	}
	blocks := (n + orderBlock - 1) / orderBlock
	out := make([]chan result, blocks)
	for k := range out {
		out[k] = make(chan result, 1)
	}
	slots := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	go func() {
		for k := 0; k < blocks; k++ {
			slots <- struct{}{}
			go func() {
				lo := k * orderBlock
				b, err := enc(lo, min(n, lo+orderBlock))
				out[k] <- result{b, err}
			}()
		}
	}()
	var first error
	for k := 0; k < blocks; k++ {
		r := <-out[k]
		<-slots
		if first == nil {
			first = r.err
		}
		if first == nil {
			first = put(r.b)
		}
	}
	return first
}
