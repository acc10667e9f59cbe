package testenv

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// FaultKind is what a FaultProxy does to a matching request.
type FaultKind int

// The faults a FaultProxy can inject. They stand in for what a real API
// server does only under load or failure, which tests cannot cause on demand.
const (
	// TooManyRequests answers 429 with Retry-After: 1.
	TooManyRequests FaultKind = iota
	// InternalError answers 500.
	InternalError
	// Unavailable answers 503 without Retry-After.
	Unavailable
	// ResetMidBody forwards the request, sends the status line, headers and
	// part of the body, then resets the connection.
	ResetMidBody
	// Slow waits Delay before forwarding.
	Slow
	// ExpiredContinue answers 410 Gone (reason Expired) to a list request
	// that carries a continue token.
	ExpiredContinue
	// Hold keeps the request until the test calls Release, then forwards
	// it: the test does what it must while the client waits (Holding says
	// when a request is held), with no delay to guess. A request whose
	// client goes away while held is dropped, not forwarded.
	Hold
)

func (k FaultKind) String() string {
	return [...]string{"429 Too Many Requests", "500 Internal Server Error", "503 Service Unavailable", "connection reset mid-body", "slow response", "410 Gone on continue", "held until released"}[k]
}

// Fault is one scheduled fault.
type Fault struct {
	Kind FaultKind
	// Path matches requests whose URL path ends with it ("" matches all).
	Path string
	// Query, when set, matches only requests whose raw query contains it
	// ("limit=50": the first page of a list, not a list of one item).
	Query string
	// Method, when set, matches only requests of that method ("POST": a
	// create, not a list of the same path).
	Method string
	// Times is how many matching requests get the fault; 0 means every one.
	Times int
	// Delay is the wait for Slow.
	Delay time.Duration
}

// FaultProxy is a TLS reverse proxy in front of the control plane that
// injects faults on a schedule and counts what it injected and every
// request it received (Requests).
type FaultProxy struct {
	// URL is the proxy's https URL; Kubeconfig an admin kubeconfig for it.
	URL        string
	Kubeconfig string

	mu       sync.Mutex
	faults   []*Fault
	injected map[FaultKind]int
	requests []Request
	srv      *httptest.Server

	// holding is closed when a Hold fault first holds a request; release
	// when Release (or Close) lets held requests go on.
	holding, release      chan struct{}
	holdOnce, releaseOnce sync.Once
}

// StartFaultProxy starts a proxy to cp with the given faults, and writes an
// admin kubeconfig pointing at it into dir.
func StartFaultProxy(cp *ControlPlane, dir string, faults ...Fault) (*FaultProxy, error) {
	target, err := url.Parse(cp.Server)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	fp := &FaultProxy{injected: map[FaultKind]int{}, holding: make(chan struct{}), release: make(chan struct{})}
	for i := range faults {
		f := faults[i]
		fp.faults = append(fp.faults, &f)
	}
	fp.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp.mu.Lock()
		fp.requests = append(fp.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery})
		fp.mu.Unlock()
		if f := fp.take(r); f != nil {
			if fp.inject(f, w, r, rp) {
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fp.srv.Listener = l
	fp.srv.StartTLS()
	fp.URL = fp.srv.URL
	fp.Kubeconfig = dir + "/fault-proxy.kubeconfig"
	if err := WriteKubeconfig(fp.Kubeconfig, fp.URL, AdminUser, cp.AdminToken); err != nil {
		fp.Close()
		return nil, err
	}
	return fp, nil
}

// take returns the first fault that applies to r, spending one of its
// Times.
func (fp *FaultProxy) take(r *http.Request) *Fault {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	for _, f := range fp.faults {
		if f.Path != "" && !strings.HasSuffix(r.URL.Path, f.Path) || !strings.Contains(r.URL.RawQuery, f.Query) || f.Method != "" && r.Method != f.Method {
			continue
		}
		if f.Kind == ExpiredContinue && r.URL.Query().Get("continue") == "" {
			continue
		}
		if f.Times < 0 {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				f.Times = -1 // spent
			}
		}
		fp.injected[f.Kind]++
		return f
	}
	return nil
}

// inject applies f; it reports whether the response was written.
func (fp *FaultProxy) inject(f *Fault, w http.ResponseWriter, r *http.Request, rp http.Handler) bool {
	switch f.Kind {
	case TooManyRequests:
		w.Header().Set("Retry-After", "1")
		writeStatus(w, http.StatusTooManyRequests, "TooManyRequests", "injected: too many requests, please try again later")
	case InternalError:
		writeStatus(w, http.StatusInternalServerError, "InternalError", "injected: internal error")
	case Unavailable:
		writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "injected: service unavailable")
	case ExpiredContinue:
		writeStatus(w, http.StatusGone, "Expired", "injected: The provided continue parameter is too old to display a consistent list result.")
	case Hold:
		fp.holdOnce.Do(func() { close(fp.holding) })
		select {
		case <-fp.release:
		case <-r.Context().Done():
			return true
		}
		return false
	case Slow:
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return true
		}
		return false
	case ResetMidBody:
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		hj, ok := w.(http.Hijacker)
		if !ok {
			return false
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return false
		}
		body := rec.Body.Bytes()
		fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", rec.Code, http.StatusText(rec.Code), rec.Header().Get("Content-Type"), len(body))
		buf.Write(body[:len(body)/2])
		buf.Flush()
		if tc, ok := conn.(*tls.Conn); ok {
			if nc, ok := tc.NetConn().(*net.TCPConn); ok {
				nc.SetLinger(0)
			}
		}
		conn.Close()
	}
	return true
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

// Injected returns how many times a fault of kind k was injected.
func (fp *FaultProxy) Injected(k FaultKind) int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.injected[k]
}

// Request is one request the proxy received.
type Request struct {
	Method, Path, Query string
}

// Requests returns the requests received so far, in order, and forgets
// them: the next call returns only later ones.
func (fp *FaultProxy) Requests() []Request {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	r := fp.requests
	fp.requests = nil
	return r
}

// Holding is closed once a Hold fault holds a request (its handler has it
// and has not forwarded it).
func (fp *FaultProxy) Holding() <-chan struct{} { return fp.holding }

// Release lets every held request, and any later Hold, go on to the
// server. It may be called more than once.
func (fp *FaultProxy) Release() { fp.releaseOnce.Do(func() { close(fp.release) }) }

// Close releases held requests and stops the proxy.
func (fp *FaultProxy) Close() {
	fp.Release() // the server's Close waits for every handler
	fp.srv.Close()
	os.Remove(fp.Kubeconfig)
}
