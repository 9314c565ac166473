package mnemo_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"mnemo.dev/clients/go/internal/testserver"
	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

const audience = "mnemo-test"

// hs256 signs a token for sub with secret (as tests/support/tokens.py does).
func hs256(t *testing.T, secret []byte, sub string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	now := time.Now().Unix()
	payload, err := json.Marshal(map[string]any{"sub": sub, "aud": audience, "iat": now, "exp": now + 300})
	if err != nil {
		t.Fatal(err)
	}
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

func TestTokenReachesAJWTServer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	raw := make([]byte, 48)
	_, _ = rand.Read(raw)
	secret := []byte(base64.RawURLEncoding.EncodeToString(raw))
	server, err := testserver.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	secretFile := filepath.Join(server.Dir, "jwt.secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	server.AddArgs("--auth", "jwt", "--jwt-hs256-secret-file", secretFile, "--jwt-audience", audience)
	if err := server.Start(ctx); err != nil {
		t.Fatal(err)
	}

	var asked atomic.Int32
	alice := newClient(t, server.Target(), mnemo.WithTokenSource(func(context.Context) (string, error) {
		asked.Add(1)
		return hs256(t, secret, "alice"), nil
	}))
	own := &mnemov1.SaveMemoryStateRequest{MemoryState: &mnemov1.MemoryState{Name: "users/alice/memoryState", Summary: "s"}}
	if _, err := alice.WorkingMemory.SaveMemoryState(ctx, own); err != nil {
		t.Fatalf("alice saving her own state: %v", err)
	}
	// The server took the user from the token: bob's state is not alice's to read.
	_, err = alice.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: "users/bob/memoryState"})
	if merr := mnemoError(t, err); merr.Code != codes.NotFound {
		t.Fatalf("alice reading bob's state: %v", merr)
	}
	if asked.Load() != 2 {
		t.Fatalf("the token source was asked %d times for 2 calls", asked.Load())
	}

	anonymous := newClient(t, server.Target())
	_, err = anonymous.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: "users/alice/memoryState"})
	if merr := mnemoError(t, err); merr.Code != codes.Unauthenticated {
		t.Fatalf("no token: %v", merr)
	}
	forged := newClient(t, server.Target(), mnemo.WithToken(hs256(t, []byte("another secret of at least 32 bytes!"), "alice")))
	_, err = forged.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: "users/alice/memoryState"})
	if merr := mnemoError(t, err); merr.Code != codes.Unauthenticated {
		t.Fatalf("a token signed with another secret: %v", merr)
	}
	fixed := newClient(t, server.Target(), mnemo.WithToken(hs256(t, secret, "alice")))
	got, err := fixed.WorkingMemory.GetMemoryState(ctx, &mnemov1.GetMemoryStateRequest{Name: "users/alice/memoryState"})
	if err != nil || got.GetMemoryState().GetSummary() != "s" {
		t.Fatalf("WithToken: %v, %v", got, err)
	}
}
