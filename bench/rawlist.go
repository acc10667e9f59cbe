package main

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/judge"
)

// rawList is the raw baseline: the requests adopt plan's collector makes
// (the same types, metadata-only lists except ConfigMap and Secret bodies
// as protobuf, the same page sizes with bodies paged by bytes, 4 types at
// once, the same client rate limit), decoded by client-go and dropped,
// with no processing.
func rawList(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 300 // as cmd/adopt sets them
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	core, err := kubernetes.NewForConfig(discover.ProtobufConfig(cfg))
	if err != nil {
		return err
	}
	types, _, err := discover.Types(dc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	items := 0
	for _, t := range types {
		if judge.SkipType(t) != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			body := t.Group == "" && (t.Kind == "ConfigMap" || t.Kind == "Secret")
			fn := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return mc.Resource(t.GVR()).List(ctx, o)
			}
			if body {
				fn = discover.BodyPages(core.CoreV1(), t.Kind, "", 500)
			}
			p := pager.New(fn)
			p.PageSize = 500
			n := 0
			err := p.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error { n++; return nil })
			mu.Lock()
			defer mu.Unlock()
			items += n
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("list %s: %w", t, err)
			}
		}()
	}
	wg.Wait()
	return firstErr
}
