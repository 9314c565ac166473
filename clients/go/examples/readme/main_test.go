package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"mnemo.dev/clients/go/internal/testserver"
)

// The README's Go example (main.go, which examples/tour/main_test.go compares
// with README.md), run as its reader runs it (MNEMO_TARGET names the server),
// prints what the README's comments say.
func TestTheReadmeExamplePrintsWhatItsCommentsSay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	server, err := testserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	t.Setenv("MNEMO_TARGET", server.Target())

	read, write, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = write
	main()
	os.Stdout = stdout
	write.Close()
	var out bytes.Buffer
	if _, err := io.Copy(&out, read); err != nil {
		t.Fatal(err)
	}
	if want := "true\nABORTED ETAG_MISMATCH\n"; out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}
