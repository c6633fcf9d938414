package ops

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"sync/atomic"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota/remote"
)

// TLSFiles are a process's TLS flags, as paths: its certificate and key
// (--tls-cert, --tls-key), the CA that signs the client certificates it
// accepts (--client-ca), and, as a client, the CA that signs its
// servers' certificates (--ca) and the certificate it presents to them
// (--client-cert, --client-key). The zero value is plain HTTP, trusting
// the system's roots.
type TLSFiles struct {
	Cert, Key, ClientCA       string
	CA, ClientCert, ClientKey string
}

// Check refuses flags that do not go together, naming them: a
// certificate without its key or the other way round, and a --client-ca
// without a certificate to serve with (mutual TLS is TLS first).
func (f TLSFiles) Check() error {
	switch {
	case (f.Cert == "") != (f.Key == ""):
		return errors.New("--tls-cert and --tls-key: give both (the certificate and its private key) or neither")
	case f.ClientCA != "" && f.Cert == "":
		return errors.New("--client-ca: needs --tls-cert and --tls-key (mutual TLS is TLS first)")
	case (f.ClientCert == "") != (f.ClientKey == ""):
		return errors.New("--client-cert and --client-key: give both or neither")
	}
	return nil
}

// ServerCerts is a listener's certificate, read again by Reload (on
// SIGHUP) so that a renewed certificate serves without a restart. It is
// safe for concurrent use.
type ServerCerts struct {
	files   TLSFiles
	cert    atomic.Pointer[tls.Certificate]
	clients atomic.Pointer[x509.CertPool]
}

// LoadServer reads the certificate, its key and the client CA of f; nil
// (plain HTTP) when f has no certificate. Its errors name the flag.
func LoadServer(f TLSFiles) (*ServerCerts, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	if f.Cert == "" {
		return nil, nil
	}
	s := &ServerCerts{files: f}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again; on an error the certificates in use
// stay. Its errors name the flag.
func (s *ServerCerts) Reload() error {
	pair, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
	if err != nil {
		return fmt.Errorf("--tls-cert %s, --tls-key %s: %w", s.files.Cert, s.files.Key, err)
	}
	var pool *x509.CertPool
	if s.files.ClientCA != "" {
		if pool, err = remote.ReadCAs("--client-ca", s.files.ClientCA); err != nil {
			return err
		}
	}
	s.cert.Store(&pair)
	s.clients.Store(pool)
	return nil
}

// Mutual says whether clients are asked for certificates (--client-ca).
func (s *ServerCerts) Mutual() bool { return s != nil && s.files.ClientCA != "" }

// Config is the listener's TLS config, reading the certificates in use
// at each handshake. With a client CA, auth says what of clients'
// certificates: tls.RequireAndVerifyClientCert where they authenticate
// (the region's decision API), tls.VerifyClientCertIfGiven where one may
// stand in for a token (the coordinator's API, whose /metrics a scraper
// reads with neither), tls.NoClientCert where none is asked for (the
// proxy, which serves end users). Without a client CA, none is.
func (s *ServerCerts) Config(auth tls.ClientAuthType) *tls.Config {
	base := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil },
	}
	if s.files.ClientCA == "" || auth == tls.NoClientCert {
		return base
	}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = s.clients.Load()
		c.ClientAuth = auth
		return c, nil
	}
	return base
}

// PlainWarning is what a process warns of when a listener (named by its
// flag, such as --listen) serves plain HTTP beyond loopback: whatever
// crosses it — tokens, decisions, metrics — can be read and changed on
// the way. "" on loopback or with TLS. The process still serves: a
// network its operator trusts (a service mesh's sidecar, say) may do
// without.
func PlainWarning(who, field, addr string, tlsOn bool) string {
	if tlsOn || hostcheck.ListenLoopback(addr) {
		return ""
	}
	return fmt.Sprintf("%s: %s %s serves plain HTTP beyond loopback: whoever is on the network can read and change what crosses it, "+
		"tokens included; give --tls-cert and --tls-key (docs/quota/operations.md, \"Deployment checklist\")", who, field, addr)
}

// ServerLog is an http.Server's ErrorLog that writes to the process's
// logger, at Warn: a client's failed TLS handshake (its CA is not the
// server's, it sent plain HTTP, it had no client certificate) is what
// an operator looks for when a region cannot connect, and it would
// otherwise go to the standard logger, apart from the process's own.
func ServerLog(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelWarn)
}
