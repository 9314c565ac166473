// Package mnemo is the Go client of the Mnemo memory service: the generated
// gRPC clients of every mnemo.v1 service (package mnemov1) over one
// connection that adds what the Python and TypeScript clients do:
//
//   - a default deadline per call (10 s; a context with its own deadline wins);
//   - retries of UNAVAILABLE for unary calls (5 attempts, exponential backoff
//     with full jitter from 100 ms to 2 s, within the deadline); a write with an
//     empty request_id gets a fresh one first, so a retried write is applied at
//     most once;
//   - a bearer token (fixed, or asked for before each attempt);
//   - errors as *Error (status code, ErrorInfo reason and metadata, BadRequest
//     field violations, RetryInfo delay);
//   - a Follower of a user's change feed that resumes by itself.
//
// A minimal session:
//
//	client, err := mnemo.New("127.0.0.1:50051", mnemo.WithToken(token))
//	if err != nil { ... }
//	defer client.Close()
//	resp, err := client.WorkingMemory.GetMemoryState(ctx,
//		&mnemov1.GetMemoryStateRequest{Name: "users/u1/memoryState"})
package mnemo

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"mnemo.dev/clients/go/mnemov1"
)

// DefaultTimeout is the default deadline of each call (the Python and
// TypeScript clients' 10 s).
const DefaultTimeout = 10 * time.Second

// RetryPolicy says how unary calls failing with UNAVAILABLE are retried.
type RetryPolicy struct {
	// MaxAttempts per call, the first included (1: no retries).
	MaxAttempts int
	// InitialBackoff is the first backoff ceiling.
	InitialBackoff time.Duration
	// MaxBackoff is the largest backoff ceiling.
	MaxBackoff time.Duration
	// Multiplier is the growth of the ceiling per attempt.
	Multiplier float64
}

// DefaultRetryPolicy mirrors the Python client's gRPC service config.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, Multiplier: 2}

// TokenSource returns the bearer token for one attempt of a call (so it can
// refresh); an error fails the call with UNAUTHENTICATED.
type TokenSource func(ctx context.Context) (string, error)

type config struct {
	token          TokenSource
	headers        map[string]string
	timeout        time.Duration
	retry          RetryPolicy
	autoRequestIDs bool
	creds          credentials.TransportCredentials
	unary          []grpc.UnaryClientInterceptor
	stream         []grpc.StreamClientInterceptor
	dialOptions    []grpc.DialOption
}

// Option configures New.
type Option func(*config)

// WithToken sends "authorization: Bearer <token>" with every call ("" sends none).
func WithToken(token string) Option {
	return WithTokenSource(func(context.Context) (string, error) { return token, nil })
}

// WithTokenSource asks source for the bearer token before each attempt of a call.
func WithTokenSource(source TokenSource) Option { return func(c *config) { c.token = source } }

// WithHeaders sends these gRPC metadata entries with every call.
func WithHeaders(headers map[string]string) Option {
	return func(c *config) {
		c.headers = make(map[string]string, len(headers))
		for k, v := range headers {
			c.headers[k] = v
		}
	}
}

// WithTimeout sets the default deadline of each call (0: none). A context
// that has a deadline of its own keeps it.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRetryPolicy replaces DefaultRetryPolicy; MaxAttempts 1 switches retries off.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *config) { c.retry = p } }

// WithAutoRequestIDs(false) stops giving writes with an empty request_id a fresh one.
func WithAutoRequestIDs(on bool) Option { return func(c *config) { c.autoRequestIDs = on } }

// WithTransportCredentials sets TLS (credentials.NewTLS); the default is
// plaintext (insecure.NewCredentials), for a server on 127.0.0.1 or behind a
// TLS-terminating proxy.
func WithTransportCredentials(creds credentials.TransportCredentials) Option {
	return func(c *config) { c.creds = creds }
}

// WithUnaryInterceptors adds interceptors run innermost, on each attempt
// (after the facade's deadline, request id, retry and token).
func WithUnaryInterceptors(interceptors ...grpc.UnaryClientInterceptor) Option {
	return func(c *config) { c.unary = append(c.unary, interceptors...) }
}

// WithStreamInterceptors adds stream interceptors run innermost.
func WithStreamInterceptors(interceptors ...grpc.StreamClientInterceptor) Option {
	return func(c *config) { c.stream = append(c.stream, interceptors...) }
}

// WithDialOptions passes extra options to grpc.NewClient (after the facade's own).
func WithDialOptions(options ...grpc.DialOption) Option {
	return func(c *config) { c.dialOptions = append(c.dialOptions, options...) }
}

// Client holds one gRPC connection and the generated client of every
// mnemo.v1 service over it. Its methods are safe for concurrent use; every
// error they return is an *Error.
//
// Memories.RecallMemories streams only the entries relevant to its query (a
// hit's Score is its relevance, 0 to 1) and Memories.BuildContext injects only
// those, so either may answer nothing (then SystemMessage is "": send the
// prompt without a memory message). A request's MinScore (proto.Float64(x))
// sets its minimum relevance; nil is the server's (0.5 with its default
// embedder, none when it recalls by words only), proto.Float64(0) every match.
type Client struct {
	WorkingMemory mnemov1.WorkingMemoryServiceClient
	Conversations mnemov1.ConversationServiceClient
	Memories      mnemov1.MemoryServiceClient
	Governance    mnemov1.GovernanceServiceClient
	Sync          mnemov1.SyncServiceClient
	Documents     mnemov1.DocumentServiceClient
	Checkpoints   mnemov1.CheckpointServiceClient
	AgentState    mnemov1.AgentStateServiceClient

	conn *grpc.ClientConn
}

// New makes a client of the server at target, in any form every Mnemo
// client and the CLI take: "127.0.0.1:50051" (plaintext),
// "http://127.0.0.1:50051", "https://mnemo.example.com" (TLS with the
// system's roots unless WithTransportCredentials says otherwise), or any
// other gRPC target such as "dns:///mnemo.example:443". It does not connect
// yet: the first call does (and a call while the server is down fails with
// UNAVAILABLE after the retries). It fails only on invalid options or an
// address with a path.
func New(target string, options ...Option) (*Client, error) {
	cfg := config{timeout: DefaultTimeout, retry: DefaultRetryPolicy, autoRequestIDs: true}
	for _, option := range options {
		option(&cfg)
	}
	target, tls, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	if cfg.creds == nil && tls {
		cfg.creds = credentials.NewTLS(nil)
	}
	if cfg.creds == nil {
		cfg.creds = insecure.NewCredentials()
	}
	unary, stream, err := interceptors(&cfg)
	if err != nil {
		return nil, err
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(cfg.creds),
		grpc.WithChainUnaryInterceptor(unary...),
		grpc.WithChainStreamInterceptor(stream...),
	}, cfg.dialOptions...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("mnemo: %w", err)
	}
	return &Client{
		WorkingMemory: mnemov1.NewWorkingMemoryServiceClient(conn),
		Conversations: mnemov1.NewConversationServiceClient(conn),
		Memories:      mnemov1.NewMemoryServiceClient(conn),
		Governance:    mnemov1.NewGovernanceServiceClient(conn),
		Sync:          mnemov1.NewSyncServiceClient(conn),
		Documents:     mnemov1.NewDocumentServiceClient(conn),
		Checkpoints:   mnemov1.NewCheckpointServiceClient(conn),
		AgentState:    mnemov1.NewAgentStateServiceClient(conn),
		conn:          conn,
	}, nil
}

// Conn is the connection under the clients, with the facade's interceptors
// (for conn.Invoke / conn.NewStream, or another generated service).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; calls in flight fail with CANCELLED.
func (c *Client) Close() error { return c.conn.Close() }

// ParseTarget is the gRPC target of an address in the forms New takes, and
// whether its scheme asks for TLS ("https://"; port 443 when none is given).
func ParseTarget(address string) (target string, tls bool, err error) {
	scheme, rest, found := strings.Cut(address, "://")
	if !found || (scheme != "http" && scheme != "https") {
		return address, false, nil
	}
	rest = strings.TrimRight(rest, "/")
	if rest == "" || strings.Contains(rest, "/") {
		return "", false, fmt.Errorf("mnemo: %q: give the server's address, as http://host:port", address)
	}
	if scheme == "http" {
		return rest, false, nil
	}
	if _, _, splitErr := net.SplitHostPort(rest); splitErr != nil {
		rest = net.JoinHostPort(strings.Trim(rest, "[]"), "443")
	}
	return rest, true, nil
}
