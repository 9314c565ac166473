// Command conformance runs the conformance scenarios (tests/conformance/README.md)
// with the Go client against a live server:
//
//	MNEMO_TARGET=127.0.0.1:50051 go run ./cmd/conformance [--target HOST:PORT] [SCENARIOS_DIR]
//
// SCENARIOS_DIR defaults to tests/conformance/scenarios of the repository
// holding the working directory. It prints "ok <id>" or "FAIL <id>: step N:
// <why>" per scenario, then "conformance go: P passed, F failed", and exits
// 1 when a scenario failed (2 on a usage error).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"mnemo.dev/clients/go/internal/conformance"
	"mnemo.dev/clients/go/internal/testserver"
	"mnemo.dev/clients/go/mnemo"
)

func main() {
	os.Exit(run())
}

func run() int {
	target := flag.String("target", os.Getenv("MNEMO_TARGET"), "the server, HOST:PORT (default $MNEMO_TARGET)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: conformance [--target HOST:PORT] [SCENARIOS_DIR]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *target == "" || flag.NArg() > 1 {
		flag.Usage()
		return 2
	}
	dir := flag.Arg(0)
	if dir == "" {
		root, err := testserver.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			return 2
		}
		dir = filepath.Join(root, "tests", "conformance", "scenarios")
	}
	scenarios, err := conformance.Load(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 2
	}
	var clients conformance.Clients
	for _, c := range []**mnemo.Client{&clients.A, &clients.B} {
		if *c, err = mnemo.New(*target); err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			return 2
		}
		defer (*c).Close()
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	passed, failed := 0, 0
	for i, s := range scenarios {
		result := conformance.Run(context.Background(), clients, s, i, hex.EncodeToString(id[:]))
		fmt.Println(result.Line())
		if result.Err == nil {
			passed++
		} else {
			failed++
		}
	}
	fmt.Printf("conformance %s: %d passed, %d failed\n", conformance.Language, passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}
