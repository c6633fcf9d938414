// Package tlstest makes the certificates the quota's TLS tests need, in
// the test, with crypto/x509: a certificate authority, server
// certificates for loopback names, and client certificates that name a
// region (ops.RegionURI) or nothing. Nothing is checked in: every run
// makes its own keys, in the test's temporary directory. Only tests
// import it.
//
//	ca := tlstest.NewCA(t)
//	cert, key := ca.Server(t)                          // 127.0.0.1, ::1, localhost
//	ccert, ckey := ca.Client(t, "urn:afloat:region:eu") // the region eu
//	// --tls-cert cert --tls-key key --client-ca ca.File; a client's --ca ca.File
package tlstest
