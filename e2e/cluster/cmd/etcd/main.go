// Command etcd is upstream etcd (go.etcd.io/etcd/server/v3, the version k8s.io/kubernetes
// v1.35.4 pins), built from this module so the binary is named etcd; it is exactly
// upstream's server/main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
