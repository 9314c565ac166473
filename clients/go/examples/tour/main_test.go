package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"mnemo.dev/clients/go/internal/testserver"
)

// docs/clients/go.md shows this program and its output on a new server, and
// README.md shows examples/readme/main.go: both as they are.
func TestTourPrintsWhatTheDocsShow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	root, err := testserver.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(parts ...string) string {
		data, err := os.ReadFile(filepath.Join(append([]string{root}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	doc := read("docs", "clients", "go.md")
	if source := read("clients", "go", "examples", "tour", "main.go"); !strings.Contains(doc, "```go\n"+source+"```") {
		t.Error("docs/clients/go.md does not show examples/tour/main.go as it is")
	}
	if source := read("clients", "go", "examples", "readme", "main.go"); !strings.Contains(read("README.md"), "```go\n"+source+"```") {
		t.Error("README.md does not show clients/go/examples/readme/main.go as it is")
	}
	shown := regexp.MustCompile("(?s)Its output, against a new server[^\n]*\n\n```text\n(.*?)```").FindStringSubmatch(doc)
	if shown == nil {
		t.Fatal("docs/clients/go.md shows no output of the tour")
	}

	// A server as `make run` starts it: with the default embedder.
	server, err := testserver.Start(ctx, "--embedder", "local")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	var out bytes.Buffer
	if err := tour(ctx, server.Target(), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != shown[1] {
		t.Fatalf("the tour printed:\n%s\ndocs/clients/go.md shows:\n%s", out.String(), shown[1])
	}
}
