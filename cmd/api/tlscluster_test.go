package main

import (
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestRunOnATLSClusterWithAnACLUser runs the service on a three-master
// Redis Cluster whose nodes speak TLS (to clients and on the cluster bus)
// and know an ACL user, through rediss://user:password@ seeds.
func TestRunOnATLSClusterWithAnACLUser(t *testing.T) {
	t.Parallel()
	certFile, keyFile := writeCert(t, t.TempDir())
	cluster := redistest.StartTLSCluster(t, 3, 0, redistest.TLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: certFile},
		"--user", "emq", "on", ">s3cret-pass", "~*", "&*", "+@all")
	seeds := make([]string, len(cluster.TLSAddrs))
	for i, addr := range cluster.TLSAddrs {
		seeds[i] = "rediss://emq:s3cret-pass@" + addr
	}
	base, _, stop := startService(t, map[string]string{"EMQ_REDIS_URL": strings.Join(seeds, ","),
		"EMQ_REDIS_CA_FILE": certFile})
	workerLoop(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
