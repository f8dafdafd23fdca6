package cli

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestServePprof(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:6060", "nohostport"} {
		if stop, err := servePprof(addr, log); err == nil {
			stop()
			t.Errorf("--pprof %s: served; want a refusal of an address beyond loopback", addr)
		} else if !strings.Contains(err.Error(), "--pprof") {
			t.Errorf("--pprof %s: %v; want the error to name the flag", addr, err)
		}
	}
	// A free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop, err := servePprof(addr, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Errorf("goroutine profile: %d %.200s", res.StatusCode, body)
	}
}
