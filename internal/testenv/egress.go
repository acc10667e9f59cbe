package testenv

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LoopbackStandIn is the address a Pod or an Endpoints object gives for a
// server of this test process that listens on 127.0.0.1. The API server
// refuses loopback addresses in Endpoints and Pod IPs, and its service
// proxy only reaches an endpoint whose Pod holds that IP; this address
// (TEST-NET-1, RFC 5737, routed nowhere) takes loopback's place there, and
// the control plane's cluster egress dials 127.0.0.1 on the same port
// instead. Ports come from the kernel, so two servers behind it never
// share one, as hostNetwork Pods share their node's IP.
const LoopbackStandIn = "192.0.2.1"

// egressConfig is the API server's EgressSelectorConfiguration: its
// "cluster" traffic (the proxy subresources of Services, Pods and Nodes,
// admission webhooks, aggregated APIs) goes through an HTTP CONNECT proxy
// on a Unix socket, as a cluster behind a Konnectivity-style proxy sends
// it. "controlplane" and "etcd" stay direct.
const egressConfig = `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`

// startEgress serves the cluster egress socket in cp.Dir and returns the
// path of the configuration file that names it (--egress-selector-config-file).
// Each connection carries one CONNECT: LoopbackStandIn:port is dialled as
// 127.0.0.1:port, any other address as it is, so webhooks and aggregated
// APIs reach what they reached without it. The listener closes on Stop.
func (cp *ControlPlane) startEgress() (string, error) {
	sock := filepath.Join(cp.Dir, "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return "", fmt.Errorf("listen on the cluster egress socket %s: %w", sock, err)
	}
	cp.egress = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed by Stop
			}
			go serveConnect(c)
		}
	}()
	path := filepath.Join(cp.Dir, "egress-selector.yaml")
	return path, os.WriteFile(path, []byte(fmt.Sprintf(egressConfig, sock)), 0o600)
}

// serveConnect answers one CONNECT request on c and then copies bytes both
// ways until either side closes.
func serveConnect(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	target := req.Host
	if host, port, err := net.SplitHostPort(target); err == nil && host == LoopbackStandIn {
		target = net.JoinHostPort("127.0.0.1", port)
	}
	up, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := fmt.Fprintf(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, br) // br first: anything read past the request
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(c, up)
		closeWrite(c)
	}()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
