package mnemo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mnemo.dev/clients/go/internal/testserver"
	"mnemo.dev/clients/go/mnemo"
)

// The server of the tests that need no server of their own: MNEMO_TARGET's,
// or one started by the first test asking for it (so that its start overlaps
// those of the tests' own servers: every test runs in parallel), stopped by
// TestMain.
var (
	sharedOnce   sync.Once
	sharedServer *testserver.Server
	sharedTarget string
	sharedErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedServer != nil {
		sharedServer.Close()
	}
	os.Exit(code)
}

// shared is the shared server's target.
func shared(t *testing.T) string {
	t.Helper()
	sharedOnce.Do(func() {
		if sharedTarget = os.Getenv("MNEMO_TARGET"); sharedTarget != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if sharedServer, sharedErr = testserver.Start(ctx); sharedErr == nil {
			sharedTarget = sharedServer.Target()
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedTarget
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
