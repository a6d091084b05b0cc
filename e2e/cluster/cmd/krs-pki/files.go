package main

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeFileAtomic writes data to a temporary file beside path and renames it into place, so
// a reader (or a crashed run) never sees a half-written certificate or kubeconfig.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeIfChanged leaves path (and its mtime) alone when it already holds data.
func writeIfChanged(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return writeFileAtomic(path, data, mode)
}

func pemEncode(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// writeKubeconfig writes a single-context kubeconfig with the CA and client cert embedded.
func writeKubeconfig(path, server, user string, ca, client *keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["krs"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: client.certPEM,
		ClientKeyData:         client.keyPEM,
	}
	cfg.Contexts["krs"] = &clientcmdapi.Context{Cluster: "krs", AuthInfo: user}
	cfg.CurrentContext = "krs"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeIfChanged(path, data, 0o600)
}
