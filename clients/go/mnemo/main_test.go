package mnemo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"mnemo.dev/clients/go/internal/testserver"
	"mnemo.dev/clients/go/mnemo"
)

// sharedTarget is the server the tests that need no server of their own
// use: MNEMO_TARGET's, or one TestMain starts (and stops).
var sharedTarget string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	sharedTarget = os.Getenv("MNEMO_TARGET")
	if sharedTarget == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		server, err := testserver.Start(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer server.Close()
		sharedTarget = server.Target()
	}
	return m.Run()
}

// testContext is bounded (every test stops by itself) and ends with the test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient is a client of target, closed when the test ends.
func newClient(t *testing.T, target string, options ...mnemo.Option) *mnemo.Client {
	t.Helper()
	client, err := mnemo.New(target, options...)
	if err != nil {
		t.Fatalf("mnemo.New: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// userID is unique to the test and the run (tests may share a server).
func userID(t *testing.T) string {
	return fmt.Sprintf("go-%s-%s", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), mnemo.NewRequestID()[:8])
}

// startServer is a server of the test's own, closed when the test ends.
func startServer(t *testing.T, ctx context.Context, args ...string) *testserver.Server {
	t.Helper()
	server, err := testserver.Start(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	return server
}

// mnemoError is err as *mnemo.Error (through errors.As), failing the test otherwise.
func mnemoError(t *testing.T, err error) *mnemo.Error {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded; want an error")
	}
	var merr *mnemo.Error
	if !errors.As(err, &merr) {
		t.Fatalf("error %T (%v) is not a *mnemo.Error", err, err)
	}
	return merr
}
