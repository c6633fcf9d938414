package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// LoadClientTLS is the TLS config of a client of the coordinators (a
// region's ClientConfig.TLS, an operator's OperatorConfig.TLS) from its
// flags' files: ca, the CA certificates (PEM) that sign the
// coordinators' certificates (--ca; "": the system's roots), and cert
// and key, the client certificate to present (--client-cert,
// --client-key; "": none). It is nil when neither is given, so that the
// default transport is used. Its errors name the flag. It is safe for
// concurrent use.
func LoadClientTLS(ca, cert, key string) (*tls.Config, error) {
	if (cert == "") != (key == "") {
		return nil, errors.New("--client-cert and --client-key: give both (the certificate and its private key) or neither")
	}
	if ca == "" && cert == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pool, err := ReadCAs("--ca", ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--client-cert %s, --client-key %s: %w", cert, key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// ReadCAs reads a PEM file of CA certificates, one or more (the old and
// the new while a CA is rotated), for field (the flag that named it).
func ReadCAs(field, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in the file", field, path)
	}
	return pool, nil
}
