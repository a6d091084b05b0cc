package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

const (
	leafValidity = 365 * 24 * time.Hour
	// A leaf expiring sooner than this is reissued on the next run.
	renewBefore = 7 * 24 * time.Hour
)

// keyPair is a certificate with its private key, as loaded from or written to <base>.crt/.key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPEM and keyPEM are the file contents, embedded into kubeconfigs.
	certPEM, keyPEM []byte
}

// leafSpec describes a certificate signed by a CA.
type leafSpec struct {
	cn     string
	orgs   []string
	ips    []net.IP
	dns    []string
	usages []x509.ExtKeyUsage
}

// ensureCA loads <dir>/<name>.crt/.key, or creates a fresh self-signed CA when either is
// missing or they do not belong together.
func ensureCA(dir, name, cn string) (*keyPair, error) {
	base := filepath.Join(dir, name)
	if kp, err := loadKeyPair(base); err == nil && kp.cert.IsCA {
		return kp, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for CA %s: %w", name, err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: cn}, key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %s: %w", name, err)
	}
	fmt.Printf("krs-pki: wrote new CA %s.crt\n", base)
	return writeKeyPair(base, cert, key)
}

// ensureLeaf keeps <dir>/<name>.crt/.key when it is signed by ca, matches spec exactly and
// is not close to expiry; otherwise it issues a new one.
func ensureLeaf(dir, name string, ca *keyPair, spec leafSpec) (*keyPair, error) {
	base := filepath.Join(dir, name)
	if kp, err := loadKeyPair(base); err == nil && leafMatches(kp.cert, ca, spec) {
		return kp, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for %s: %w", name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("serial for %s: %w", name, err)
	}
	now := time.Now().Add(-5 * time.Minute)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:    now,
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  spec.usages,
		IPAddresses:  spec.ips,
		DNSNames:     spec.dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new %s: %w", name, err)
	}
	fmt.Printf("krs-pki: wrote %s.crt (CN=%s O=%v)\n", base, spec.cn, spec.orgs)
	return writeKeyPair(base, cert, key)
}

func leafMatches(cert *x509.Certificate, ca *keyPair, spec leafSpec) bool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: spec.usages}); err != nil {
		return false
	}
	if time.Until(cert.NotAfter) < renewBefore {
		return false
	}
	ipEqual := func(a, b net.IP) bool { return a.Equal(b) }
	return cert.Subject.CommonName == spec.cn &&
		slices.Equal(cert.Subject.Organization, spec.orgs) &&
		slices.Equal(cert.DNSNames, spec.dns) &&
		slices.EqualFunc(cert.IPAddresses, spec.ips, ipEqual)
}

// loadKeyPair reads <base>.crt and <base>.key and checks that the key belongs to the cert.
func loadKeyPair(base string) (*keyPair, error) {
	certPEM, err := os.ReadFile(base + ".crt")
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, err
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s.crt: %w", base, err)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s.key: %w", base, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s.key: not a signing key", base)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%s.key: %w", base, err)
	}
	if !bytes.Equal(pub, certs[0].RawSubjectPublicKeyInfo) {
		return nil, errors.New(base + ".key does not match " + base + ".crt")
	}
	return &keyPair{cert: certs[0], key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

func writeKeyPair(base string, cert *x509.Certificate, key crypto.Signer) (*keyPair, error) {
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(base+".key", keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(base+".crt", certPEM, 0o644); err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// ensureServiceAccountKey keeps <dir>/sa.key when it parses, else writes a new ECDSA key;
// either way it (re)writes the public half to sa.pub.
func ensureServiceAccountKey(dir string) error {
	keyPath := filepath.Join(dir, "sa.key")
	var key crypto.Signer
	if data, err := os.ReadFile(keyPath); err == nil {
		if parsed, err := keyutil.ParsePrivateKeyPEM(data); err == nil {
			key, _ = parsed.(crypto.Signer)
		}
	}
	if key == nil {
		fresh, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("generate service-account key: %w", err)
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(fresh)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
			return err
		}
		fmt.Printf("krs-pki: wrote new service-account key %s\n", keyPath)
		key = fresh
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	pubPEM := pemEncode("PUBLIC KEY", der)
	return writeIfChanged(filepath.Join(dir, "sa.pub"), pubPEM, 0o644)
}
