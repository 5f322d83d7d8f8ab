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

// TestUnescapedPasswordsAreNeverMisread: a password with an unescaped '#',
// '/' or '?' would make a URL parser end the host early and drop the
// password or show it as a path. A plain URL with one is refused and not
// shown; a Sentinel URL's user part ends at its last '@', so the password
// is read whole.
func TestUnescapedPasswordsAreNeverMisread(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"redis://default:2024#Secret@redis.internal:6379/0",
		"redis://default:12/34secret@redis.internal:6379",
		"redis://default:99?topsecret@redis.internal:6379",
		"redis://a:1,redis://default:12/34secret@b:6379",
		"redis+sentinel://app:12/34secret@sentinel-1",
	} {
		if target, err := Parse(raw); err == nil {
			t.Errorf("%s: accepted as %+v", raw, target)
		}
		if m := Mask(raw); strings.Contains(m, "ecret") {
			t.Errorf("Mask(%s) = %s: the password shows", raw, m)
		}
	}
	for raw, want := range map[string]string{
		"redis+sentinel://app:12/34#se?cret@sentinel-1/emq": "12/34#se?cret",
		"redis+sentinel://:p%40ss@sentinel-1/emq":           "p@ss",
	} {
		target, err := Parse(raw)
		if err != nil || target.Sentinel.Password != want || target.Sentinel.MasterName != "emq" {
			t.Errorf("%s: %+v, %v; want the password %q, master emq", raw, target.Sentinel, err, want)
		}
		if m := Mask(raw); strings.Contains(m, "cret") || strings.Contains(m, "ss@") {
			t.Errorf("Mask(%s) = %s: the password shows", raw, m)
		}
	}
}

// TestSentinelTLSChecksEachServerByItsOwnName: go-redis would check every
// sentinel's and data node's certificate against the first sentinel's
// name; each is checked against its own address instead.
func TestSentinelTLSChecksEachServerByItsOwnName(t *testing.T) {
	t.Parallel()
	target, err := Parse("rediss+sentinel://sentinel-1,sentinel-2,sentinel-3/emq")
	if err != nil || target.Sentinel.TLSConfig == nil || target.Sentinel.TLSConfig.ServerName != "" {
		t.Fatalf("%+v, %v; want TLS with no one server name", target.Sentinel, err)
	}
}

// TestSentinelOptionsThatReadReplicasAreRefused: echo_mq writes, and
// go-redis's failover client panics at two of these.
func TestSentinelOptionsThatReadReplicasAreRefused(t *testing.T) {
	t.Parallel()
	for _, option := range sentinelQueryRefused {
		raw := "redis+sentinel://s1/emq?" + option + "=true"
		if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), option) {
			t.Errorf("%s: %v, want an error naming %s", raw, err, option)
		}
	}
}
