package redisurl

import (
	"strings"
	"testing"
	"time"
)

func TestOneURLIsOneNode(t *testing.T) {
	t.Parallel()
	target, err := Parse(" rediss://u:pw@10.0.0.1:7000/2 ")
	node := target.Node
	if err != nil || target.Cluster != nil || target.Sentinel != nil || node.Addr != "10.0.0.1:7000" || node.DB != 2 || node.TLSConfig == nil {
		t.Fatalf("got %+v, %v; want one TLS node, database 2", target, err)
	}
}

func TestSeedsMakeACluster(t *testing.T) {
	t.Parallel()
	target, err := Parse("redis://u:pw@10.0.0.1:7000?dial_timeout=2s, redis://u:pw@10.0.0.2:7001")
	opts := target.Cluster
	if err != nil || opts == nil {
		t.Fatalf("got %+v, %v; want a Cluster", target, err)
	}
	if len(opts.Addrs) != 2 || opts.Addrs[0] != "10.0.0.1:7000" || opts.Addrs[1] != "10.0.0.2:7001" {
		t.Fatalf("addrs %v, want both seeds", opts.Addrs)
	}
	if opts.Username != "u" || opts.Password != "pw" || opts.DialTimeout != 2*time.Second {
		t.Fatalf("got user %q, dial timeout %v; want the first URL's settings", opts.Username, opts.DialTimeout)
	}
	if _, err := Parse("redis://10.0.0.1:7000/0,redis://10.0.0.2:7001/0"); err != nil {
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
		_, err := Parse(urls)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", urls, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "other")) {
			t.Errorf("%s: the error %q quotes a password", urls, err)
		}
	}
}

func TestSentinelURLNamesSentinelsAndMaster(t *testing.T) {
	t.Parallel()
	target, err := Parse("redis+sentinel://app:s%40cret@10.0.0.1:26380,10.0.0.2,[::1]:26381/my%20master/3?dial_timeout=2s&sentinel_password=sp")
	opts := target.Sentinel
	if err != nil || opts == nil || target.Node != nil || target.Cluster != nil {
		t.Fatalf("got %+v, %v; want Sentinel options", target, err)
	}
	if want := []string{"10.0.0.1:26380", "10.0.0.2:26379", "[::1]:26381"}; strings.Join(opts.SentinelAddrs, " ") != strings.Join(want, " ") {
		t.Errorf("sentinels %v, want %v (26379 where no port is given)", opts.SentinelAddrs, want)
	}
	if opts.MasterName != "my master" || opts.DB != 3 || opts.DialTimeout != 2*time.Second {
		t.Errorf("master %q, db %d, dial timeout %v; want \"my master\", 3, 2s", opts.MasterName, opts.DB, opts.DialTimeout)
	}
	if opts.Username != "app" || opts.Password != "s@cret" || opts.SentinelPassword != "sp" || opts.SentinelUsername != "" {
		t.Errorf("credentials %q/%q, sentinels' %q/%q; want the URL's for the data nodes, sentinel_password for the sentinels",
			opts.Username, opts.Password, opts.SentinelUsername, opts.SentinelPassword)
	}
	if opts.TLSConfig != nil {
		t.Error("redis+sentinel:// speaks TLS")
	}
	tls, err := Parse("rediss+sentinel://:pw@sentinel-1/emq")
	if err != nil || tls.Sentinel.TLSConfig == nil || tls.Sentinel.Password != "pw" || tls.Sentinel.Username != "" || tls.Sentinel.DB != 0 {
		t.Errorf("rediss+sentinel: %+v, %v; want TLS, the default user with pw, database 0", tls.Sentinel, err)
	}
}

func TestSentinelURLsThatCannotBeHonouredAreRefused(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"redis+sentinel://10.0.0.1:26379":                        "names the master",
		"redis+sentinel://10.0.0.1:26379/":                       "names the master",
		"redis+sentinel://10.0.0.1:26379/m/x":                    "must be a number",
		"redis+sentinel://10.0.0.1:26379/m/1/2":                  "names the master",
		"redis+sentinel://10.0.0.1:26379,,10.0.0.2/m":            "no empty one",
		"redis+sentinel://10.0.0.1:26379/m?master_name=other":    "option master_name",
		"redis+sentinel://u:pw@10.0.0.1:26379/m?password=pw2":    "option password",
		"redis+sentinel://10.0.0.1:26379/m?addr=10.0.0.3:1":      "option addr",
		"redis+sentinel://10.0.0.1:26379/m?no_such_option=pw":    "unexpected option",
		"redis+sentinel://u:p%zz@10.0.0.1:26379/m":               "not a valid",
		"redis+sentinel://10.0.0.1:26379/m?dial_timeout=forever": "not a valid",
	} {
		_, err := Parse(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: the error %q quotes a password", raw, err)
		}
	}
}

func TestMaskHidesEveryPassword(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"redis://user:secret@10.0.0.1:7000,rediss://:pw@h:6380/0":                                    "redis://user:xxxxx@10.0.0.1:7000,rediss://:xxxxx@h:6380/0",
		"redis+sentinel://app:secret@s1,s2:26380/emq/2?sentinel_password=alsosecret&dial_timeout=1s": "redis+sentinel://app:xxxxx@s1:26379,s2:26380/emq/2?dial_timeout=1s&sentinel_password=xxxxx",
		"redis+sentinel://s1/emq": "redis+sentinel://s1:26379/emq",
		"redis+sentinel://s1":     "<unparseable>",
	} {
		if got := Mask(raw); got != want {
			t.Errorf("Mask(%s) = %s, want %s", raw, got, want)
		}
	}
}
