// Package bearer is the HTTP client of a service drainctl sends a bearer token to (the
// notification webhook, the Prometheus gate): the token never crosses the network in clear
// (plain http only to this machine) and never follows a redirect to wherever it points.
package bearer

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Client is an HTTP client for u. With a token, u must be https, or http to a loopback
// address; caFile, when given, is the only CA its certificate may chain to. Redirects are not
// followed: the answer is the redirect itself, which the caller takes as a failure.
func Client(u *url.URL, hasToken bool, caFile string, timeout time.Duration) (*http.Client, error) {
	if hasToken && u.Scheme == "http" && !Loopback(u.Hostname()) {
		return nil, fmt.Errorf(
			"%s is plain http: its token would cross the network in clear; use https (plain http is allowed to a loopback address only)",
			u.Redacted(),
		)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("the CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the CA file %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &http.Client{Timeout: timeout, Transport: tr, CheckRedirect: noRedirect}, nil
}

// Loopback reports whether host is this machine (localhost, 127.0.0.0/8, ::1).
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
