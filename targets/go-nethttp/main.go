// The loadlab reference target on Go's standard library net/http (../CONTRACT.md): a
// ServeMux with method patterns, the default http.Server, and one shared http.Client for
// /upstream. Over HTTPS (TLS_CERT, TLS_KEY) the same server runs ServeTLS with crypto/tls
// (HTTP/1.1 and HTTP/2 by ALPN, session tickets on, as the standard library defaults); an
// https:// UPSTREAM_URL is called trusting UPSTREAM_CA. Nothing outside the standard library,
// but grpc-go for /upstream-grpc (upstream_grpc.go) and the contract's gRPC service on the
// same port (workload_grpc.go), and Prometheus's client_golang for /metrics (metrics.go).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

const serverName = "go-net/http"

type config struct {
	host, port, contentDir string
	workers, backlog       int
	upstream               string
	upstreamGRPC           string // HOST:PORT from UPSTREAM_GRPC_URL, "" when unset
	// UPSTREAM_CA: the CA file an https:// upstream's certificate chains to.
	upstreamCA string
	// TLS_CERT and TLS_KEY: serve HTTPS only.
	tlsCert, tlsKey string
}

// configError reports a bad variable with its fix and exits 2, as the contract asks.
func configError(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

func readConfig() config {
	env := func(name, fallback string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return fallback
	}
	positive := func(name string, fallback int) int {
		v, ok := os.LookupEnv(name)
		if !ok {
			return fallback
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			configError("%s must be a whole number >= 1, got %q: fix or unset it", name, v)
		}
		return n
	}
	c := config{
		host:       env("HOST", "127.0.0.1"),
		port:       env("PORT", "0"),
		contentDir: env("CONTENT_DIR", "../content"),
		workers:    positive("WORKERS", runtime.NumCPU()),
		backlog:    positive("BACKLOG", 1024),
		upstream:   os.Getenv("UPSTREAM_URL"),
		upstreamCA: os.Getenv("UPSTREAM_CA"),
		tlsCert:    os.Getenv("TLS_CERT"),
		tlsKey:     os.Getenv("TLS_KEY"),
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		configError("TLS_CERT and TLS_KEY go together: set both (a PEM certificate chain and its PEM private key) to serve HTTPS, or neither for plain HTTP; got TLS_CERT=%q TLS_KEY=%q", c.tlsCert, c.tlsKey)
	}
	c.upstreamGRPC = grpcUpstreamTarget(os.Getenv("UPSTREAM_GRPC_URL"))
	if _, err := strconv.ParseUint(c.port, 10, 16); err != nil {
		configError("PORT must be a port number from 0 to 65535, got %q", c.port)
	}
	if net.ParseIP(c.host) == nil {
		configError("HOST must be an IP address such as 127.0.0.1, got %q", c.host)
	}
	if c.upstream != "" {
		if u, err := url.Parse(c.upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			configError("UPSTREAM_URL must be an http:// or https:// URL such as http://127.0.0.1:9100/, got %q", c.upstream)
		}
	}
	return c
}

// param applies the 400 rule: one or more ASCII digits, at most max; the first value counts.
func param(w http.ResponseWriter, r *http.Request, name string, max uint64) (uint64, bool) {
	values := r.URL.Query()[name]
	raw := ""
	if len(values) > 0 {
		raw = values[0]
	}
	valid := raw != ""
	for i := 0; i < len(raw) && valid; i++ {
		valid = raw[i] >= '0' && raw[i] <= '9'
	}
	var n uint64
	if valid {
		var err error
		n, err = strconv.ParseUint(raw, 10, 64)
		valid = err == nil && n <= max
	}
	if !valid {
		text(w, http.StatusBadRequest, fmt.Sprintf("query parameter %s must be a whole number from 0 to %d, got %q", name, max, raw))
		return 0, false
	}
	return n, true
}

func write(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func text(w http.ResponseWriter, status int, body string) {
	write(w, status, "text/plain; charset=utf-8", []byte(body))
}

func html(w http.ResponseWriter, status int, body string) {
	write(w, status, "text/html; charset=utf-8", []byte(body))
}

func jsonReply(w http.ResponseWriter, value any) {
	body, err := json.Marshal(value)
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	write(w, http.StatusOK, "application/json", body)
}

type upstreamReply struct {
	Calls         uint64 `json:"calls"`
	Client        string `json:"client"`
	UpstreamBytes int64  `json:"upstream_bytes"`
}

// callUpstream makes one GET and reads the body to the end (so the connection can be reused).
func callUpstream(client *http.Client, url string) (int64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return n, fmt.Errorf("upstream answered %s", resp.Status)
	}
	return n, nil
}

// upstreamRoots is the pool an https:// upstream's certificate must chain to: UPSTREAM_CA's
// certificates, or nil (the system's roots) when it is unset.
func upstreamRoots(c config) *x509.CertPool {
	if c.upstreamCA == "" {
		return nil
	}
	pem, err := os.ReadFile(c.upstreamCA)
	if err != nil {
		configError("UPSTREAM_CA=%s: cannot read it: %v (give a PEM file of CA certificates)", c.upstreamCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		configError("UPSTREAM_CA=%s: holds no PEM certificate (give a PEM file of CA certificates)", c.upstreamCA)
	}
	return pool
}

func routes(s *site, c config) http.Handler {
	roots := upstreamRoots(c)
	// The one pooled client of the process: net/http's Transport keeps idle connections,
	// but by default only 2 per host (DefaultMaxIdleConnsPerHost). Under concurrent load
	// that closes and reopens most upstream connections (measured: 15,018 connections for
	// 37,136 calls at 50 concurrent requests), so production setups raise it. Over HTTPS it
	// also keeps TLS sessions (crypto/tls resumes only with a ClientSessionCache), so a new
	// pooled connection resumes instead of paying a full handshake.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = 1024
	transport.MaxIdleConnsPerHost = 1024
	transport.TLSClientConfig = &tls.Config{RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(0)}
	pooled := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	bytesBuf := make([]byte, 10485760)
	for i := range bytesBuf {
		bytesBuf[i] = byte('a' + i%26)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /plaintext", func(w http.ResponseWriter, r *http.Request) {
		text(w, 200, "Hello, World!")
	})
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		jsonReply(w, struct {
			Message string `json:"message"`
		}{"Hello, World!"})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		text(w, 200, "ok")
	})
	mux.HandleFunc("GET /delay", func(w http.ResponseWriter, r *http.Request) {
		ms, ok := param(w, r, "ms", 10000)
		if !ok {
			return
		}
		// A parked goroutine waiting on a runtime timer: no thread is held.
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		text(w, 200, "done")
	})
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, r *http.Request) {
		ms, ok := param(w, r, "ms", 1000)
		if !ok {
			return
		}
		// A blocking system call holds the OS thread (time.Sleep would only park the
		// goroutine). Go's scheduler hands the P to another thread meanwhile, which is
		// exactly the behaviour this endpoint exists to measure.
		ts := syscall.NsecToTimespec(int64(ms) * int64(time.Millisecond))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
		text(w, 200, "done")
	})
	mux.HandleFunc("GET /compute", func(w http.ResponseWriter, r *http.Request) {
		n, ok := param(w, r, "n", 100000)
		if !ok {
			return
		}
		jsonReply(w, compute(int(n)))
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, ok := param(w, r, "n", uint64(len(bytesBuf)))
		if !ok {
			return
		}
		write(w, 200, "application/octet-stream", bytesBuf[:n])
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			text(w, http.StatusRequestEntityTooLarge, "the request body must be at most 1048576 bytes")
			return
		} else if err != nil {
			text(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
			return
		}
		write(w, 200, "application/octet-stream", body)
	})
	mux.HandleFunc("GET /upstream", func(w http.ResponseWriter, r *http.Request) {
		calls, ok := param(w, r, "calls", 64)
		if !ok {
			return
		}
		mode := "pooled"
		if values := r.URL.Query()["client"]; len(values) > 0 {
			mode = values[0]
		}
		if mode != "pooled" && mode != "per-call" {
			text(w, 400, fmt.Sprintf("query parameter client must be pooled or per-call, got %q", mode))
			return
		}
		if c.upstream == "" {
			text(w, 503, "UPSTREAM_URL is not set")
			return
		}
		var total int64
		for i := uint64(0); i < calls; i++ {
			client := pooled
			var fresh *http.Transport
			if mode == "per-call" {
				// A client per call, dropped after it: the mistake post 004 found. Its TLS
				// configuration is new too (no session cache): a full handshake every call.
				fresh = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
				client = &http.Client{Transport: fresh, Timeout: 30 * time.Second}
			}
			n, err := callUpstream(client, c.upstream)
			if fresh != nil {
				fresh.CloseIdleConnections()
			}
			if err != nil {
				text(w, 502, "upstream call failed: "+err.Error())
				return
			}
			total += n
		}
		jsonReply(w, upstreamReply{calls, mode, total})
	})
	registerUpstreamGRPC(mux, c.upstreamGRPC)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		html(w, 200, s.homePage())
	})
	mux.HandleFunc("GET /blogs", func(w http.ResponseWriter, r *http.Request) {
		html(w, 200, s.blogsPage())
	})
	mux.HandleFunc("GET /blogs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if page, ok := s.blogPage(r.PathValue("id")); ok {
			html(w, 200, page)
		} else {
			html(w, 404, s.notFoundPage())
		}
	})
	routeMetrics(mux)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		html(w, 200, s.versionPage())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		html(w, 404, s.notFoundPage())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", serverName)
		mux.ServeHTTP(w, r)
	})
}

// compute is the contract's generator: its first n numbers (/compute, and the gRPC Compute).
func compute(n int) []uint32 {
	numbers := make([]uint32, n)
	x := uint32(42)
	for i := range numbers {
		x = (x*1103515245 + 12345) & 0x7fffffff
		numbers[i] = x
	}
	return numbers
}

func main() {
	c := readConfig()
	runtime.GOMAXPROCS(c.workers)
	s, err := loadSite(c.contentDir)
	if err != nil {
		configError("CONTENT_DIR=%s: cannot load the portfolio content: %v (point CONTENT_DIR at targets/content)", c.contentDir, err)
	}
	// BACKLOG is validated but Go's net package always listens with the kernel's
	// net.core.somaxconn; the standard library offers no per-listener backlog.
	ln, err := net.Listen("tcp", net.JoinHostPort(c.host, c.port))
	if err != nil {
		configError("cannot listen on %s: %v (pick another PORT or HOST)", net.JoinHostPort(c.host, c.port), err)
	}
	server := &http.Server{Handler: withWorkloadGRPC(routes(s, c))}
	// HTTP/2 without TLS too (prior knowledge, h2c): the gRPC service's plain transport. An
	// HTTP/1.1 connection is served as before (the server only looks for HTTP/2's preface).
	server.Protocols = new(http.Protocols)
	server.Protocols.SetHTTP1(true)
	server.Protocols.SetHTTP2(true)
	server.Protocols.SetUnencryptedHTTP2(true)
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			configError("TLS_CERT=%s, TLS_KEY=%s: cannot load the certificate and key: %v (give a PEM certificate chain and its PEM private key)", c.tlsCert, c.tlsKey, err)
		}
		// crypto/tls's defaults: TLS 1.2 and 1.3, session tickets on; ServeTLS adds h2 and
		// http/1.1 to ALPN.
		server.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", ln.Addr())
	if c.tlsCert != "" {
		err = server.ServeTLS(ln, "", "")
	} else {
		err = server.Serve(ln)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
