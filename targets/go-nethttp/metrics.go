// GET /metrics (the contract's `metrics` capability): the Prometheus text exposition of
// client_golang's default registry, which holds the process collector (process_cpu_seconds_total,
// process_resident_memory_bytes, open file descriptors, read from /proc by the library) and the
// Go runtime's collector (goroutines, GC, heap). Nothing of the workload is counted here: a
// server's own counters cost requests, and the contract's endpoints must stay comparable
// across targets.
package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func routeMetrics(mux *http.ServeMux) {
	mux.Handle("GET /metrics", promhttp.Handler())
}
