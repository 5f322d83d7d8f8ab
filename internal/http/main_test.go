package http_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestMain starts the real redis-server that the contract tests share; each
// test uses a key prefix of its own, and the embedded store a server of its
// own. go-redis's own log is muted: TestRedisDown makes it log every refused
// dial on purpose. After a whole run it fails unless every operation of
// api/openapi.yaml was exercised (see CheckContract).
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	code := redistest.Run(m)
	if code == 0 && wholeRun() {
		code = checkContractCoverage()
	}
	os.Exit(code)
}

// wholeRun reports whether every test ran: no -run, -skip or -list, and not
// a fuzzing run (whose workers run no test).
func wholeRun() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list", "test.fuzz"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	f := flag.Lookup("test.fuzzworker")
	return f == nil || f.Value.String() != "true"
}

// checkContractCoverage answers 1, naming them, when some operations of the
// spec were never answered 2xx with the request and the answer checked.
func checkContractCoverage() int {
	gaps, err := emqhttp.ContractGaps()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(gaps) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: no test exercised these operations of api/openapi.yaml with a checked 2xx exchange: %s\n"+
			"(add a test that calls them through the harness, or name them in uncheckedOperations with the reason)\n",
			strings.Join(gaps, ", "))
		return 1
	}
	return 0
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
