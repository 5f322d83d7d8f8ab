package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key as
// PEM files in dir; the certificate is its own CA, and serves as a client
// certificate too (cluster nodes present it to each other on the bus).
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "echo_mq test redis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "redis.crt"), filepath.Join(dir, "redis.key")
	for file, block := range map[string]*pem.Block{
		certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRunOverTLSWithAnACLUser runs the service on a redis-server that
// speaks TLS and knows an ACL user, through rediss://user:password@.
func TestRunOverTLSWithAnACLUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir)
	tlsPort := freePort(t)
	redistest.StartServer(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no",
		"--user", "emq", "on", ">s3cret-pass", "~*", "&*", "+@all")
	url := "rediss://emq:s3cret-pass@127.0.0.1:" + strconv.Itoa(tlsPort) + "/0"

	base, _, stop := startService(t, map[string]string{"EMQ_REDIS_URL": url, "EMQ_REDIS_CA_FILE": certFile})
	workerLoop(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// A wrong password: the service starts, but is not ready.
	bad := "rediss://emq:wrong-pass@127.0.0.1:" + strconv.Itoa(tlsPort) + "/0"
	base, _, stop = startService(t, map[string]string{"EMQ_REDIS_URL": bad, "EMQ_REDIS_CA_FILE": certFile})
	resp, err := http.Get(base + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with a wrong password: %v %v, want 503", resp, err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
