// Package testserver runs a live Mnemo server for the Go tests: a real
// `<repo>/.venv/bin/python -m mnemo_server serve` process on a temp SQLite
// file and a free 127.0.0.1 port (as clients/typescript/test/support/server.ts).
//
//	server, err := testserver.Start(ctx, "--auth", "jwt", ...)
//	defer server.Close()
//	client, _ := mnemo.New(server.Target())
//	server.Stop()          // SIGTERM; Start(ctx) brings it back on the same port
//
// The first start listens on port 0 and reads the bound port from the start
// line ("mnemo X serving on 127.0.0.1:PORT ..."), then waits until
// grpc.health.v1 answers SERVING; a restart asks for the same port again.
// Every wait is bounded by the context; an error carries the end of the log.
// Override the interpreter with MNEMO_PYTHON.
package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const (
	pollInterval = 50 * time.Millisecond
	stopTimeout  = 30 * time.Second
	logTail      = 4000
)

var servingOn = regexp.MustCompile(`mnemo \S+ serving on (\S+):(\d+) `)

// RepoRoot is the nearest ancestor of the working directory holding
// pyproject.toml and server/.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "pyproject.toml")) && isDir(filepath.Join(dir, "server")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testserver: repository root (pyproject.toml + server/) not found")
		}
		dir = parent
	}
}

func isFile(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }
func isDir(p string) bool  { st, err := os.Stat(p); return err == nil && st.IsDir() }

// Server is one server's temp directory and its current process.
type Server struct {
	// Dir holds the SQLite file, the logs and any file a test writes (a key).
	Dir  string
	args []string
	port int

	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
	starts  int
}

// Start makes a temp directory and starts a server in it with the extra
// serve flags (--listen and --database-url are set here).
func Start(ctx context.Context, args ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "mnemo-go-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, args: args}
	if err := s.Start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// New makes the temp directory only (to write a key file first); Start it.
func New(args ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "mnemo-go-")
	if err != nil {
		return nil, err
	}
	return &Server{Dir: dir, args: args}, nil
}

// AddArgs appends serve flags for the next Start.
func (s *Server) AddArgs(args ...string) { s.args = append(s.args, args...) }

// Port is the gRPC port of the running (or last) process.
func (s *Server) Port() int { return s.port }

// Target is "127.0.0.1:PORT".
func (s *Server) Target() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Start starts a process (on the same port as before, if any) and waits until it is SERVING.
func (s *Server) Start(ctx context.Context) error {
	if s.Running() {
		return errors.New("testserver: already running")
	}
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	python := os.Getenv("MNEMO_PYTHON")
	if python == "" {
		python = filepath.Join(root, ".venv", "bin", "python")
	}
	s.starts++
	s.logPath = filepath.Join(s.Dir, fmt.Sprintf("mnemo-serve-%d.log", s.starts))
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := []string{"-m", "mnemo_server", "serve",
		"--listen", "127.0.0.1:" + strconv.Itoa(s.port),
		"--database-url", "sqlite:///" + filepath.Join(s.Dir, "mnemo.db")}
	// The client's tests check what the protocol carries, not how the model
	// ranks: no embedder (so recall is lexical), unless a test asks for one.
	if !slices.Contains(s.args, "--embedder") {
		args = append(args, "--embedder", "none")
	}
	args = append(args, s.args...)
	cmd := exec.Command(python, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.exited)

	for {
		if m := servingOn.FindStringSubmatch(s.Log()); m != nil {
			s.port, _ = strconv.Atoi(m[2])
			break
		}
		if !s.Running() {
			return s.fail("exited before serving")
		}
		if err := s.pause(ctx); err != nil {
			return err
		}
	}
	for !s.serving(ctx) {
		if !s.Running() {
			return s.fail("exited")
		}
		if err := s.pause(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		_ = s.Stop()
		return s.fail("did not start in time: " + ctx.Err().Error())
	case <-time.After(pollInterval):
		return nil
	}
}

func (s *Server) serving(ctx context.Context) bool {
	conn, err := grpc.NewClient(s.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// Stop sends SIGTERM and waits (SIGKILL after 30 s).
func (s *Server) Stop() error {
	if !s.Running() {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a suspended process would not act on SIGTERM
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return nil
}

// Suspend sends SIGSTOP: the port still accepts connections, nothing
// answers (a hung server). Resume (or Close) afterwards.
func (s *Server) Suspend() {
	if s.Running() {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Resume sends SIGCONT after Suspend.
func (s *Server) Resume() {
	if s.Running() {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Kill sends SIGKILL (a crash) and waits for the exit.
func (s *Server) Kill() {
	if s.Running() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Close stops the process if it runs and removes the temp directory.
func (s *Server) Close() {
	_ = s.Stop()
	_ = os.RemoveAll(s.Dir)
}

// Log is what the current (or last) process wrote to stdout and stderr.
func (s *Server) Log() string {
	data, _ := os.ReadFile(s.logPath)
	return string(data)
}

func (s *Server) fail(what string) error {
	log := s.Log()
	if len(log) > logTail {
		log = log[len(log)-logTail:]
	}
	return fmt.Errorf("testserver: mnemo serve (%s) %s; its log ends with:\n%s", s.logPath, what, log)
}
