package plan

import "runtime"

// orderBlock is how many list items one job takes.
const orderBlock = 128

// ordered works on items 0..n-1 in blocks of orderBlock on every core and
// hands the blocks' results to put in item order: encoding a
// 100,000-object plan, or judging its objects, is CPU work that need not
// wait for the one consumer. At most two blocks per core are in flight,
// so memory stays a few blocks' worth. enc appends a block's results to
// the buffer it is given, one put has returned from (put must not keep
// it): growing and zeroing a fresh buffer per block was a fifth of
// encoding. The first error wins; later blocks are still drained, never
// put.
func ordered[T any](n int, enc func(b []T, lo, hi int) ([]T, error), put func([]T) error) error {
	type result struct {
		b   []T
		err error
	}
	blocks := (n + orderBlock - 1) / orderBlock
	out := make([]chan result, blocks)
	for k := range out {
		out[k] = make(chan result, 1)
	}
	slots := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	free := make(chan []T, cap(slots))
	go func() {
		for k := 0; k < blocks; k++ {
			slots <- struct{}{}
			var b []T
			select {
			case b = <-free:
			default:
			}
			go func() {
				lo := k * orderBlock
				b, err := enc(b, lo, min(n, lo+orderBlock))
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
		select {
		case free <- r.b[:0]:
		default:
		}
	}
	return first
}
