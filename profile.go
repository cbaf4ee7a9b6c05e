package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// serveProfiles serves Go's profiles on DRAINCTL_PPROF (a loopback address such as
// 127.0.0.1:6060), for finding where a large cluster's time and memory go in a running
// TUI or daemon. Off unless set; a non-loopback address is refused.
func serveProfiles(addr string) {
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "drainctl: DRAINCTL_PPROF=%q ignored: give a loopback address such as 127.0.0.1:6060\n", addr)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = http.ListenAndServe(addr, mux) }()
}
