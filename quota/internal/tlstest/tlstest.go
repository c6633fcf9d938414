package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test. Its methods are safe
// for concurrent use.
type CA struct {
	// File is the path of its certificate (PEM): what --ca and
	// --client-ca take.
	File string
	// Pool holds its certificate, for a client or server made in the
	// test.
	Pool *x509.CertPool

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// serials numbers the certificates of a test binary: each certificate a
// CA signs needs its own serial.
var serials atomic.Int64

// NewCA makes a certificate authority valid for an hour around now, its
// certificate in a file in the test's temporary directory.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serials.Add(1)),
		Subject:               pkix.Name{CommonName: "afloat test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("tlstest: CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("tlstest: CA: %v", err)
	}
	dir, err := os.MkdirTemp(t.TempDir(), "ca")
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, dir: dir, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	ca.File = filepath.Join(dir, "ca.pem")
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Server makes a certificate for serving, on 127.0.0.1, ::1 and
// localhost and the extra DNS names given, and returns its files: the
// certificate and the key.
func (ca *CA) Server(t testing.TB, names ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := ca.template("server")
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.DNSNames = append([]string{"localhost"}, names...)
	return ca.issue(t, tmpl)
}

// Client makes a client certificate whose URI SANs are uris (none: a
// certificate that names no one), and returns its files.
func (ca *CA) Client(t testing.TB, uris ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := ca.template("client")
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	for _, s := range uris {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("tlstest: URI %q: %v", s, err)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	return ca.issue(t, tmpl)
}

// ClientConfig is a TLS client's config that trusts the CA and, with
// files given (a Client's), presents that certificate.
func (ca *CA) ClientConfig(t testing.TB, certFile, keyFile string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func (ca *CA) template(cn string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serials.Add(1)),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("tlstest: %s: %v", tmpl.Subject.CommonName, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	n := tmpl.SerialNumber.String()
	certFile = filepath.Join(ca.dir, tmpl.Subject.CommonName+"-"+n+".pem")
	keyFile = filepath.Join(ca.dir, tmpl.Subject.CommonName+"-"+n+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kder)
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("tlstest: key: %v", err)
	}
	return key
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
