// Command krs-pki writes the test cluster's PKI and kubeconfigs, idempotently: files that
// exist and still match (signed by the current CA, same subject and SANs, not near expiry)
// are kept, anything else is (re)issued.
//
//	krs-pki control-plane --dir PKI --server URL --advertise-ip IP --service-ip IP
//	krs-pki node --dir PKI --server URL --name NODE --ip IP [--out DIR]
//
// Layout (see e2e/cluster/README.md): ca.{crt,key} signs the apiserver serving cert and
// every client cert; kubelet-ca.{crt,key} signs kubelet serving certs and is what the
// apiserver verifies kubelets with (--kubelet-certificate-authority); front-proxy-ca.crt
// signs front-proxy-client (the aggregation layer); sa.{key,pub} sign and verify
// service-account tokens.
package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

var (
	clientUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: krs-pki control-plane|node [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "control-plane":
		err = controlPlane(os.Args[2:])
	case "node":
		err = node(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q (want control-plane or node)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "krs-pki:", err)
		os.Exit(1)
	}
}

func parseIP(flagName, value string) (net.IP, error) {
	ip := net.ParseIP(value)
	if ip == nil {
		return nil, fmt.Errorf("--%s=%q is not an IP address", flagName, value)
	}
	return ip, nil
}

func controlPlane(args []string) error {
	fs := flag.NewFlagSet("control-plane", flag.ExitOnError)
	dir := fs.String("dir", "", "PKI directory (required)")
	server := fs.String("server", "https://127.0.0.1:6443", "apiserver URL written into kubeconfigs")
	advertise := fs.String("advertise-ip", "", "apiserver advertise address, added to its serving cert (required)")
	serviceIP := fs.String("service-ip", "198.18.254.1", "first IP of the service CIDR (the kubernetes Service)")
	_ = fs.Parse(args)
	if *dir == "" || *advertise == "" {
		return errors.New("control-plane: --dir and --advertise-ip are required")
	}
	advIP, err := parseIP("advertise-ip", *advertise)
	if err != nil {
		return err
	}
	svcIP, err := parseIP("service-ip", *serviceIP)
	if err != nil {
		return err
	}
	ca, err := ensureCA(*dir, "ca", "kubelet-rs-test-ca")
	if err != nil {
		return err
	}
	if _, err := ensureCA(*dir, "kubelet-ca", "kubelet-rs-test-kubelet-serving-ca"); err != nil {
		return err
	}
	// The aggregation layer's identity (--requestheader-client-ca-file, --proxy-client-*).
	frontProxyCA, err := ensureCA(*dir, "front-proxy-ca", "kubelet-rs-test-front-proxy-ca")
	if err != nil {
		return err
	}
	if _, err := ensureLeaf(*dir, "front-proxy-client", frontProxyCA,
		leafSpec{cn: "front-proxy-client", usages: clientUsage}); err != nil {
		return err
	}
	if _, err := ensureLeaf(*dir, "apiserver", ca, leafSpec{
		cn:  "kube-apiserver",
		ips: []net.IP{net.ParseIP("127.0.0.1"), advIP, svcIP},
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		usages: serverUsage,
	}); err != nil {
		return err
	}
	// Bound to the system:kubelet-api-admin ClusterRole by cluster-up.sh.
	if _, err := ensureLeaf(*dir, "apiserver-kubelet-client", ca,
		leafSpec{cn: "kube-apiserver-kubelet-client", usages: clientUsage}); err != nil {
		return err
	}
	if err := ensureServiceAccountKey(*dir); err != nil {
		return err
	}
	identities := []struct{ name, cn, org string }{
		{"admin", "kubernetes-admin", "system:masters"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
		{"kube-proxy", "system:kube-proxy", ""},
	}
	for _, id := range identities {
		spec := leafSpec{cn: id.cn, usages: clientUsage}
		if id.org != "" {
			spec.orgs = []string{id.org}
		}
		kp, err := ensureLeaf(*dir, id.name, ca, spec)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(filepath.Join(*dir, id.name+".kubeconfig"), *server, id.cn, ca, kp); err != nil {
			return err
		}
	}
	return nil
}

func node(args []string) error {
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	dir := fs.String("dir", "", "PKI directory written by control-plane (required)")
	server := fs.String("server", "https://127.0.0.1:6443", "apiserver URL written into the kubeconfig")
	name := fs.String("name", "", "node name (required)")
	ipFlag := fs.String("ip", "", "node IP, put into the kubelet serving cert (required)")
	out := fs.String("out", "", "output directory (default <dir>/nodes/<name>)")
	_ = fs.Parse(args)
	if *dir == "" || *name == "" || *ipFlag == "" {
		return errors.New("node: --dir, --name and --ip are required")
	}
	nodeIP, err := parseIP("ip", *ipFlag)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(*dir, "nodes", *name)
	}
	ca, err := loadKeyPair(filepath.Join(*dir, "ca"))
	if err != nil {
		return fmt.Errorf("node: run control-plane first: %w", err)
	}
	kubeletCA, err := loadKeyPair(filepath.Join(*dir, "kubelet-ca"))
	if err != nil {
		return fmt.Errorf("node: run control-plane first: %w", err)
	}
	client, err := ensureLeaf(*out, "kubelet-client", ca, leafSpec{
		cn: "system:node:" + *name, orgs: []string{"system:nodes"}, usages: clientUsage,
	})
	if err != nil {
		return err
	}
	if _, err := ensureLeaf(*out, "kubelet-serving", kubeletCA, leafSpec{
		cn: "system:node:" + *name, orgs: []string{"system:nodes"},
		ips: []net.IP{nodeIP, net.ParseIP("127.0.0.1")}, dns: []string{*name, "localhost"},
		usages: serverUsage,
	}); err != nil {
		return err
	}
	return writeKubeconfig(filepath.Join(*out, "kubelet.kubeconfig"), *server, "system:node:"+*name, ca, client)
}
