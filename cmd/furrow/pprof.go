package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
)

// startPprof serves the Go profiler on addr (FURROW_PPROF_ADDR), apart from
// the API so that it is never exposed with it. Empty addr: off.
func startPprof(addr string, log *slog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	log.Warn("profiler listening; keep it on loopback", "addr", addr)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Error("profiler stopped", "err", err)
		}
	}()
}
