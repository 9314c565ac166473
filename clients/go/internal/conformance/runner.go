// Package conformance runs the scenarios of tests/conformance/scenarios (the
// format is tests/conformance/README.md) with the Go client: every method is
// found in the generated package's descriptors (protoregistry), its request
// and response built from the registered message types and converted with
// protojson, and called with conn.Invoke / conn.NewStream over the facade's
// connection, so its deadline, token and retry interceptors take part.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"mnemo.dev/clients/go/mnemo"
	_ "mnemo.dev/clients/go/mnemov1" // registers the mnemo.v1 descriptors and types
)

// CallTimeout is the deadline of each call, and how long a receive step waits.
const CallTimeout = 10 * time.Second

// Language is this runner's name in user ids and in the last line.
const Language = "go"

// Scenario is one scenario file.
type Scenario struct {
	ID          string // its path below the scenarios folder, without .json
	Description string
	Steps       []map[string]any
}

// Load reads every *.json below dir, in sorted path order.
func Load(dir string) ([]Scenario, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".json") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(paths, func(i, j int) bool { return filepath.ToSlash(paths[i]) < filepath.ToSlash(paths[j]) })
	scenarios := make([]Scenario, 0, len(paths))
	for _, path := range paths {
		rel, _ := filepath.Rel(dir, path)
		id := strings.TrimSuffix(filepath.ToSlash(rel), ".json")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var raw struct {
			Description string           `json:"description"`
			Steps       []map[string]any `json:"steps"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		scenarios = append(scenarios, Scenario{ID: id, Description: raw.Description, Steps: raw.Steps})
	}
	return scenarios, nil
}

// Clients are the two clients a scenario's steps choose with "client".
type Clients struct{ A, B *mnemo.Client }

// Result is the outcome of one scenario: Err is nil when it passed, else
// Step (1-based) failed with Err.
type Result struct {
	ID   string
	Step int
	Err  error
}

// Line is the scenario's output line: "ok <id>" or "FAIL <id>: step N: <why>".
func (r Result) Line() string {
	if r.Err == nil {
		return "ok " + r.ID
	}
	why := strings.Join(strings.Fields(r.Err.Error()), " ")
	if r.Step == 0 {
		return fmt.Sprintf("FAIL %s: %s", r.ID, why)
	}
	return fmt.Sprintf("FAIL %s: step %d: %s", r.ID, r.Step, why)
}

// Run runs one scenario; index and runID make its users
// (conf-go-<runID>-<index> and the same with -b).
func Run(ctx context.Context, clients Clients, s Scenario, index int, runID string) Result {
	user := fmt.Sprintf("conf-%s-%s-%d", Language, runID, index)
	r := &run{clients: clients, vars: map[string]any{"user": user, "other_user": user + "-b"}, streams: map[string]*openStream{}}
	defer r.closeAll()
	if len(s.Steps) == 0 {
		return Result{ID: s.ID, Err: errors.New("no steps")}
	}
	for i, step := range s.Steps {
		if err := r.step(ctx, step); err != nil {
			return Result{ID: s.ID, Step: i + 1, Err: err}
		}
	}
	return Result{ID: s.ID}
}

type run struct {
	clients Clients
	vars    map[string]any
	streams map[string]*openStream
}

// openStream is a server stream an "open" step started; a goroutine reads it.
type openStream struct {
	cancel   context.CancelFunc
	messages chan any   // each message as JSON
	end      chan error // then its end: nil (OK) or the error
}

var stepKeys = map[string][]string{
	"call":    {"method", "request", "requests", "client", "expect", "save", "description"},
	"open":    {"open", "method", "request", "client", "description"},
	"receive": {"receive", "expect", "save", "description"},
	"close":   {"close", "description"},
}

func (r *run) step(ctx context.Context, step map[string]any) error {
	form := "call"
	for _, f := range []string{"open", "receive", "close"} {
		if _, ok := step[f]; ok {
			form = f
			break
		}
	}
	if _, ok := step["method"]; form == "call" && !ok {
		return errors.New("not a step: no method, open, receive or close")
	}
	for key := range step {
		if !contains(stepKeys[form], key) {
			return fmt.Errorf("a %s step has no field %q", form, key)
		}
	}
	switch form {
	case "open":
		return r.open(ctx, step)
	case "receive":
		return r.receive(step)
	case "close":
		name, _ := step["close"].(string)
		s, ok := r.streams[name]
		if !ok {
			return fmt.Errorf("no open stream %q", name)
		}
		s.cancel()
		delete(r.streams, name)
		return nil
	default:
		return r.call(ctx, step)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func (r *run) closeAll() {
	for _, s := range r.streams {
		s.cancel()
	}
}

func (r *run) client(step map[string]any) (*mnemo.Client, error) {
	switch step["client"] {
	case nil, "a":
		return r.clients.A, nil
	case "b":
		return r.clients.B, nil
	default:
		return nil, fmt.Errorf("client %v: want \"a\" or \"b\"", step["client"])
	}
}

// method finds "mnemo.v1.Service/Method" in the registered descriptors.
func method(step map[string]any) (protoreflect.MethodDescriptor, string, error) {
	name, _ := step["method"].(string)
	service, methodName, ok := strings.Cut(name, "/")
	if !ok {
		return nil, "", fmt.Errorf("method %q is not Service/Method", name)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, "", fmt.Errorf("service %s: %w", service, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, "", fmt.Errorf("%s is not a service", service)
	}
	md := sd.Methods().ByName(protoreflect.Name(methodName))
	if md == nil {
		return nil, "", fmt.Errorf("service %s has no method %s", service, methodName)
	}
	return md, "/" + service + "/" + methodName, nil
}

func newMessage(d protoreflect.MessageDescriptor) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

// request builds the message of type d from JSON v, after the placeholders.
func (r *run) request(d protoreflect.MessageDescriptor, v any) (proto.Message, error) {
	v, err := substitute(v, r.vars)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	msg, err := newMessage(d)
	if err != nil {
		return nil, err
	}
	if err := protojson.Unmarshal(data, msg); err != nil {
		return nil, fmt.Errorf("request %s: %w", data, err)
	}
	return msg, nil
}

// toJSON is the canonical proto3 JSON of m without default values, decoded.
func toJSON(m proto.Message) (any, error) {
	data, err := protojson.MarshalOptions{UseProtoNames: false, EmitUnpopulated: false}.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err = dec.Decode(&v)
	return v, err
}

func (r *run) call(ctx context.Context, step map[string]any) error {
	md, path, err := method(step)
	if err != nil {
		return err
	}
	client, err := r.client(step)
	if err != nil {
		return err
	}
	var requests []proto.Message
	if raw, ok := step["requests"]; ok {
		list, ok := raw.([]any)
		if !ok || !md.IsStreamingClient() {
			return errors.New("requests: an array, for a client-streaming method only")
		}
		for _, v := range list {
			m, err := r.request(md.Input(), v)
			if err != nil {
				return err
			}
			requests = append(requests, m)
		}
	} else {
		m, err := r.request(md.Input(), step["request"])
		if err != nil {
			return err
		}
		requests = []proto.Message{m}
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	var response any
	if !md.IsStreamingClient() && !md.IsStreamingServer() {
		out, err := newMessage(md.Output())
		if err != nil {
			return err
		}
		if err := client.Conn().Invoke(ctx, path, requests[0], out); err != nil {
			return r.expectError(step, err)
		}
		if response, err = toJSON(out); err != nil {
			return err
		}
	} else {
		var err error
		response, err = stream(ctx, client, md, path, requests)
		if err != nil {
			return r.expectError(step, err)
		}
	}
	return r.expectResponse(step, response)
}

// stream sends requests, half-closes and reads every response: one message
// (client streaming) or the array of them (server streaming).
func stream(ctx context.Context, client *mnemo.Client, md protoreflect.MethodDescriptor, path string, requests []proto.Message) (any, error) {
	desc := &grpc.StreamDesc{StreamName: string(md.Name()), ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}
	s, err := client.Conn().NewStream(ctx, desc, path)
	if err != nil {
		return nil, err
	}
	for _, m := range requests {
		if err := s.SendMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				break // the stream ended: RecvMsg says how
			}
			return nil, err
		}
	}
	if err := s.CloseSend(); err != nil {
		return nil, err
	}
	var all []any
	for {
		out, err := newMessage(md.Output())
		if err != nil {
			return nil, err
		}
		if err := s.RecvMsg(out); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		v, err := toJSON(out)
		if err != nil {
			return nil, err
		}
		all = append(all, v)
		if !md.IsStreamingServer() {
			break
		}
	}
	if !md.IsStreamingServer() {
		if len(all) != 1 {
			return nil, fmt.Errorf("%d responses to a client-streaming call", len(all))
		}
		return all[0], nil
	}
	if all == nil {
		all = []any{}
	}
	return all, nil
}

// expectation is the step's "expect" after the placeholders, and which form it has.
func (r *run) expectation(step map[string]any) (response any, errorWant map[string]any, hasResponse bool, err error) {
	raw, ok := step["expect"]
	if !ok {
		return nil, nil, false, nil
	}
	raw, err = substitute(raw, r.vars)
	if err != nil {
		return nil, nil, false, err
	}
	expect, ok := raw.(map[string]any)
	if !ok {
		return nil, nil, false, errors.New(`expect: want {"response": ...} or {"error": ...}`)
	}
	for key := range expect {
		if key != "response" && key != "error" {
			return nil, nil, false, fmt.Errorf("expect has no field %q", key)
		}
	}
	if e, ok := expect["error"]; ok {
		errorWant, ok = e.(map[string]any)
		if !ok {
			return nil, nil, false, errors.New("expect.error: want an object")
		}
		return nil, errorWant, false, nil
	}
	response, hasResponse = expect["response"]
	return response, nil, hasResponse, nil
}

func (r *run) expectResponse(step map[string]any, response any) error {
	want, errorWant, hasResponse, err := r.expectation(step)
	if err != nil {
		return err
	}
	if errorWant != nil {
		return fmt.Errorf("succeeded, want %s: %s", text(errorWant["code"]), text(response))
	}
	if hasResponse {
		if err := match(want, response, true, ""); err != nil {
			return err
		}
	}
	return r.save(step, response)
}

func (r *run) expectError(step map[string]any, callErr error) error {
	_, want, _, err := r.expectation(step)
	if err != nil {
		return err
	}
	merr := mnemo.AsError(callErr)
	if want == nil {
		return fmt.Errorf("failed: %v", merr)
	}
	return matchError(want, merr)
}

func matchError(want map[string]any, merr *mnemo.Error) error {
	for key := range want {
		if key != "code" && key != "reason" && key != "fieldViolations" {
			return fmt.Errorf("expect.error has no field %q", key)
		}
	}
	code, ok := want["code"].(string)
	if !ok {
		return errors.New("expect.error.code: required, a status code name")
	}
	if merr.CodeName() != code {
		return fmt.Errorf("got %v, want code %s", merr, code)
	}
	if reason, ok := want["reason"]; ok && text(reason) != merr.Reason {
		return fmt.Errorf("got %v, want reason %s", merr, text(reason))
	}
	if raw, ok := want["fieldViolations"]; ok {
		fields, ok := raw.([]any)
		if !ok {
			return errors.New("expect.error.fieldViolations: want an array of field names")
		}
		for _, f := range fields {
			if !merr.Violates(text(f)) {
				return fmt.Errorf("got %v, want a field violation of %s", merr, text(f))
			}
		}
	}
	return nil
}

func (r *run) save(step map[string]any, response any) error {
	raw, ok := step["save"]
	if !ok {
		return nil
	}
	saves, ok := raw.(map[string]any)
	if !ok {
		return errors.New("save: want an object of name: path")
	}
	for name, p := range saves {
		path, ok := p.(string)
		if !ok {
			return fmt.Errorf("save %s: the path must be a string", name)
		}
		value, err := lookup(response, path)
		if err != nil {
			return fmt.Errorf("save %s: %w", name, err)
		}
		r.vars[name] = value
	}
	return nil
}

func (r *run) open(ctx context.Context, step map[string]any) error {
	name, ok := step["open"].(string)
	if !ok || name == "" {
		return errors.New("open: want a stream name")
	}
	if _, taken := r.streams[name]; taken {
		return fmt.Errorf("stream %q is open already", name)
	}
	md, path, err := method(step)
	if err != nil {
		return err
	}
	if !md.IsStreamingServer() || md.IsStreamingClient() {
		return fmt.Errorf("open: %s is not a server-streaming method", path)
	}
	client, err := r.client(step)
	if err != nil {
		return err
	}
	req, err := r.request(md.Input(), step["request"])
	if err != nil {
		return err
	}
	// The stream stays open until closed: no deadline of its own (each
	// receive waits at most CallTimeout).
	streamCtx, cancel := context.WithCancel(mnemo.WithoutTimeout(ctx))
	desc := &grpc.StreamDesc{StreamName: string(md.Name()), ServerStreams: true}
	s, err := client.Conn().NewStream(streamCtx, desc, path)
	if err == nil {
		err = s.SendMsg(req)
	}
	if err == nil {
		err = s.CloseSend()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		cancel()
		return fmt.Errorf("open: %v", err)
	}
	o := &openStream{cancel: cancel, messages: make(chan any, 1024), end: make(chan error, 1)}
	go func() {
		defer close(o.messages)
		for {
			out, err := newMessage(md.Output())
			if err == nil {
				err = s.RecvMsg(out)
			}
			if errors.Is(err, io.EOF) {
				o.end <- nil
				return
			}
			if err != nil {
				o.end <- err
				return
			}
			v, err := toJSON(out)
			if err != nil {
				o.end <- err
				return
			}
			select {
			case o.messages <- v:
			case <-streamCtx.Done():
				o.end <- streamCtx.Err()
				return
			}
		}
	}()
	r.streams[name] = o
	return nil
}

// receive reads the open stream until a message matches expect.response
// (or, with expect.error, until the stream ends with that error).
func (r *run) receive(step map[string]any) error {
	name, _ := step["receive"].(string)
	s, ok := r.streams[name]
	if !ok {
		return fmt.Errorf("no open stream %q", name)
	}
	want, errorWant, hasResponse, err := r.expectation(step)
	if err != nil {
		return err
	}
	timer := time.NewTimer(CallTimeout)
	defer timer.Stop()
	received := 0
	for {
		select {
		case v, ok := <-s.messages:
			if !ok {
				end := <-s.end
				s.end <- end // a later receive sees the same end
				if errorWant != nil && end != nil {
					return matchError(errorWant, mnemo.AsError(end))
				}
				if end == nil {
					return fmt.Errorf("stream %q ended after %d more messages, none matching", name, received)
				}
				return fmt.Errorf("stream %q failed after %d more messages, none matching: %v", name, received, mnemo.AsError(end))
			}
			received++
			if errorWant != nil {
				continue
			}
			if !hasResponse || match(want, v, true, "") == nil { // no expect: the next message
				return r.save(step, v)
			}
		case <-timer.C:
			return fmt.Errorf("no matching message on stream %q within %v (%d received)", name, CallTimeout, received)
		}
	}
}
