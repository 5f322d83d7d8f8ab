package redisurl

import (
	"strings"
	"testing"
	"time"
)

func TestOneURLIsOneNode(t *testing.T) {
	t.Parallel()
	node, cluster, err := Parse(" rediss://u:pw@10.0.0.1:7000/2 ")
	if err != nil || cluster != nil || node.Addr != "10.0.0.1:7000" || node.DB != 2 || node.TLSConfig == nil {
		t.Fatalf("got %+v, %v, %v; want one TLS node, database 2", node, cluster, err)
	}
}

func TestSeedsMakeACluster(t *testing.T) {
	t.Parallel()
	node, opts, err := Parse("redis://u:pw@10.0.0.1:7000?dial_timeout=2s, redis://u:pw@10.0.0.2:7001")
	if err != nil || node != nil {
		t.Fatalf("got %v, %v; want a Cluster", node, err)
	}
	if len(opts.Addrs) != 2 || opts.Addrs[0] != "10.0.0.1:7000" || opts.Addrs[1] != "10.0.0.2:7001" {
		t.Fatalf("addrs %v, want both seeds", opts.Addrs)
	}
	if opts.Username != "u" || opts.Password != "pw" || opts.DialTimeout != 2*time.Second {
		t.Fatalf("got user %q, dial timeout %v; want the first URL's settings", opts.Username, opts.DialTimeout)
	}
	if _, _, err := Parse("redis://10.0.0.1:7000/0,redis://10.0.0.2:7001/0"); err != nil {
		t.Errorf("database 0 refused: %v", err)
	}
}

func TestSeedsThatCannotBeHonouredAreRefused(t *testing.T) {
	t.Parallel()
	for urls, want := range map[string]string{
		"redis://10.0.0.1:7000/1,redis://10.0.0.2:7001":               "only database 0",
		"redis://10.0.0.1:7000,redis://10.0.0.2:7001/2":               "only database 0",
		"redis://10.0.0.1:7000,rediss://10.0.0.2:7001":                "differs from the first",
		"redis://u:pw@10.0.0.1:7000,redis://u:other@10.0.0.2:7001":    "differs from the first",
		"redis://10.0.0.1:7000,redis://10.0.0.2:7001?dial_timeout=1s": "differs from the first",
		"redis://10.0.0.1:7000,http://10.0.0.2:7001":                  "not a valid",
		"redis://u:p%zz@10.0.0.1:7000,redis://10.0.0.2:7001":          "not a valid",
	} {
		_, _, err := Parse(urls)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", urls, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "other")) {
			t.Errorf("%s: the error %q quotes a password", urls, err)
		}
	}
}
