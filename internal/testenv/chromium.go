package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Chromium is Debian's headless chromium (installed by
// tools/install-debs.sh), run on local files only, with every host name
// resolving nowhere so nothing can leave the machine, and Chromium's own
// background traffic (updates, sign-in, field trials) off.
type Chromium struct {
	Bin string
	// Dir holds the profile and the net logs.
	Dir string
}

// NewChromium finds chromium on PATH. Missing is an error, never a skip:
// install it with internal/testenv/tools/install-debs.sh.
func NewChromium(dir string) (*Chromium, error) {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return &Chromium{Bin: p, Dir: dir}, nil
		}
	}
	return nil, fmt.Errorf("chromium is not installed: run internal/testenv/tools/install-debs.sh (as root or with sudo)")
}

// Page is what one headless load of a file gave.
type Page struct {
	// DOM is the serialized DOM after load (--dump-dom); empty for a
	// screenshot run.
	DOM string
	// NetLog is the path of Chromium's net log of the run.
	NetLog string
}

func (c *Chromium) run(ctx context.Context, name string, extra ...string) (Page, []byte, error) {
	pg := Page{NetLog: filepath.Join(c.Dir, name+".netlog.json")}
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-features=MediaRouter,OptimizationHints,Translate",
		`--host-resolver-rules=MAP * ~NOTFOUND`,
		"--user-data-dir=" + filepath.Join(c.Dir, name+".profile"),
		"--log-net-log=" + pg.NetLog, "--net-log-capture-mode=Default",
	}
	cmd := exec.CommandContext(ctx, c.Bin, append(args, extra...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return pg, nil, fmt.Errorf("chromium %s: %v: %s", strings.Join(extra, " "), err, lastLines(errb.String(), 5))
	}
	return pg, out.Bytes(), nil
}

// DumpDOM loads file and returns its DOM after load.
func (c *Chromium) DumpDOM(ctx context.Context, file string) (Page, error) {
	pg, out, err := c.run(ctx, "dom-"+filepath.Base(file), "--dump-dom", "file://"+file)
	pg.DOM = string(out)
	return pg, err
}

// Screenshot loads file in a width×height window and writes a PNG to png.
func (c *Chromium) Screenshot(ctx context.Context, file, png string, width, height int) (Page, error) {
	pg, _, err := c.run(ctx, "shot-"+filepath.Base(file), fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+png, "file://"+file)
	if err == nil {
		if _, serr := os.Stat(png); serr != nil {
			err = fmt.Errorf("chromium wrote no screenshot: %v", serr)
		}
	}
	return pg, err
}

// PageRequests reads a net log and returns the URL of every request a page
// made (one whose initiator is an origin, such as a file:// page, as
// opposed to the browser's own, "not an origin").
func PageRequests(netlog string) ([]string, error) {
	b, err := os.ReadFile(netlog)
	if err != nil {
		return nil, err
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int            `json:"type"`
			Params map[string]any `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &log); err != nil {
		// A log cut off at exit lacks its closing brackets.
		s := strings.TrimRight(strings.TrimSpace(string(b)), ",")
		if err2 := json.Unmarshal([]byte(s+"]}"), &log); err2 != nil {
			return nil, fmt.Errorf("net log %s: %v", netlog, err)
		}
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		return nil, fmt.Errorf("net log %s has no URL_REQUEST_START_JOB event type", netlog)
	}
	var urls []string
	for _, e := range log.Events {
		if e.Type != start {
			continue
		}
		u, _ := e.Params["url"].(string)
		if u == "" {
			continue // the job's end, not its start
		}
		init, _ := e.Params["initiator"].(string)
		nik, _ := e.Params["network_isolation_key"].(string)
		if init != "not an origin" || strings.HasPrefix(nik, "file://") {
			urls = append(urls, u)
		}
	}
	return urls, nil
}
