package mnemo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mnemo.dev/clients/go/internal/conformance"
)

// The runner (go run ./cmd/conformance) on scenarios of this test's own:
// every step form, both clients, saves, matchers, client and server streams,
// and scenarios that must fail, each at its step and for its reason.
var runnerScenarios = map[string]struct{ json, line string }{
	"streams/import-export": {`{"description": "import (client stream), export (server stream) on client b", "steps": [
		{"method": "mnemo.v1.GovernanceService/ImportUserData", "requests": [
			{"parent": "users/${user}", "record": {"memoryState": {"name": "users/${user}/memoryState", "summary": "imported", "updateTime": "2026-01-02T03:04:05Z"}}},
			{"parent": "users/${user}", "record": {"memory": {"name": "users/${user}/memories/m1", "text": "the sky is green", "createTime": "2026-01-02T03:04:05Z", "updateTime": "2026-01-02T03:04:05Z"}}}],
		 "expect": {"response": {"loaded": {"$any": true}}}},
		{"method": "mnemo.v1.GovernanceService/ExportUserData", "client": "b", "request": {"parent": "users/${user}"},
		 "expect": {"response": {"$some": {"record": {"memory": {"text": "the sky is green", "etag": {"$any": true}}}}}}},
		{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "users/${user}/memoryState"},
		 "expect": {"response": {"memoryState": {"summary": "imported", "recent": null, "name": {"$contains": "${user}"}}}}}]}`,
		"ok streams/import-export"},
	"streams/watch": {`{"description": "a watch on client a sees client b's write", "steps": [
		{"open": "w", "method": "mnemo.v1.SyncService/WatchChanges", "request": {"parent": "users/${user}"}},
		{"receive": "w", "expect": {"response": {"heartbeat": {"time": {"$any": true}}}}},
		{"method": "mnemo.v1.WorkingMemoryService/RememberExchange", "client": "b",
		 "request": {"name": "users/${user}/memoryState", "exchange": {"ask": "q", "answer": "a"}},
		 "save": {"cursor": "changeCursor", "etag": "memoryState.etag"}},
		{"receive": "w", "expect": {"response": {"change": {"cursor": "${cursor}", "etag": "${etag}", "memoryState": {"recent": {"$len": 1}}}}}, "save": {"seen": "change.cursor"}},
		{"method": "mnemo.v1.SyncService/ListChanges", "request": {"parent": "users/${user}", "afterCursor": "${seen}"},
		 "expect": {"response": {"changes": null, "latestCursor": {"$gte": "${cursor}"}, "nextCursor": "${cursor}"}}},
		{"close": "w"}]}`,
		"ok streams/watch"},
	"wrong/code": {`{"steps": [{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "bogus"},
		"expect": {"error": {"code": "NOT_FOUND"}}}]}`,
		"FAIL wrong/code: step 1: got INVALID_ARGUMENT [INVALID_NAME]"},
	"wrong/field": {`{"steps": [{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "bogus"},
		"expect": {"error": {"code": "INVALID_ARGUMENT", "reason": "INVALID_NAME", "fieldViolations": ["parent"]}}}]}`,
		"FAIL wrong/field: step 1: got INVALID_ARGUMENT [INVALID_NAME]"},
	"wrong/succeeded": {`{"steps": [{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "users/${user}/memoryState"}},
		{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "users/${other_user}/memoryState"},
		 "expect": {"error": {"code": "ABORTED"}}}]}`,
		"FAIL wrong/succeeded: step 2: succeeded, want ABORTED"},
	"wrong/placeholder": {`{"steps": [{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "users/${nobody}/memoryState"}}]}`,
		"FAIL wrong/placeholder: step 1: unknown placeholder ${nobody}"},
	"wrong/save": {`{"steps": [{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "users/${user}/memoryState"},
		"save": {"x": "memoryState.etag"}}]}`,
		`FAIL wrong/save: step 1: save x: path "memoryState.etag": no "etag"`},
	"wrong/response": {`{"steps": [{"method": "mnemo.v1.WorkingMemoryService/GetMemoryState", "request": {"name": "users/${user}/memoryState"},
		"expect": {"response": {"memoryState": {"name": {"$contains": "nobody"}}}}}]}`,
		"FAIL wrong/response: step 1: memoryState.name: got users/conf-go-"},
	"wrong/closed": {`{"steps": [{"open": "w", "method": "mnemo.v1.SyncService/WatchChanges", "request": {"parent": "users/${user}"}},
		{"close": "w"}, {"receive": "w"}]}`,
		`FAIL wrong/closed: step 3: no open stream "w"`},
}

func TestConformanceRunner(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	for id, s := range runnerScenarios {
		path := filepath.Join(dir, filepath.FromSlash(id)+".json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s.json), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scenarios, err := conformance.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) != len(runnerScenarios) || scenarios[0].ID != "streams/import-export" || scenarios[len(scenarios)-1].ID != "wrong/succeeded" {
		t.Fatalf("loaded %d scenarios, first %q, last %q", len(scenarios), scenarios[0].ID, scenarios[len(scenarios)-1].ID)
	}
	clients := conformance.Clients{A: newClient(t, shared(t)), B: newClient(t, shared(t))}
	runID := userID(t)[len(userID(t))-8:]
	for i, s := range scenarios {
		line := conformance.Run(ctx, clients, s, i, runID).Line()
		if want := runnerScenarios[s.ID].line; !strings.HasPrefix(line, want) {
			t.Errorf("%s:\n got %s\nwant %s...", s.ID, line, want)
		}
	}
}
