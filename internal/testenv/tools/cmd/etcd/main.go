// Command etcd runs a single-member etcd server embedded from
// go.etcd.io/etcd/server/v3/embed, bound to loopback. It exists only for the
// test harness: upstream etcd cannot be installed with `go install` because of
// its replace directives.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory")
	clientURL := flag.String("client-url", "http://127.0.0.1:2379", "client URL (loopback)")
	peerURL := flag.String("peer-url", "http://127.0.0.1:2380", "peer URL (loopback)")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		os.Exit(2)
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd: bad --client-url:", err)
		os.Exit(2)
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd: bad --peer-url:", err)
		os.Exit(2)
	}
	cfg := embed.NewConfig()
	cfg.Name = "adopt-test"
	cfg.Dir = *dataDir
	cfg.LogLevel = "error"
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.MaxRequestBytes = 3 * 1024 * 1024
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd: start:", err)
		os.Exit(1)
	}
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println("etcd ready on", cu.String())
	case <-time.After(60 * time.Second):
		e.Close()
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd:", err)
	}
	e.Close()
}
