package conformance

import (
	"bytes"
	"encoding/json"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		expected, actual string
		ok               bool
	}{
		{`{"a": "3"}`, `{"a": 3}`, true},
		{`{"a": 3}`, `{"a": "3"}`, true},
		{`{"a": 3}`, `{"a": "4"}`, false},
		{`{"a": "x"}`, `{"a": "x", "b": 1}`, true},
		{`{"a": null}`, `{"b": 1}`, true},
		{`{"a": null}`, `{"a": 0}`, false},
		{`{"a": 0}`, `{}`, false},
		{`{"a": {"b": 1}}`, `{}`, false},
		{`{"a": [1, 2]}`, `{"a": [1, 2]}`, true},
		{`{"a": [1]}`, `{"a": [1, 2]}`, false},
		{`{"a": {"$any": true}}`, `{"a": false}`, true},
		{`{"a": {"$any": true}}`, `{}`, false},
		{`{"a": {"$len": 0}}`, `{}`, true},
		{`{"a": {"$len": 2}}`, `{"a": [{}, {}]}`, true},
		{`{"a": {"$len": 1}}`, `{"a": [{}, {}]}`, false},
		{`{"a": {"$gt": 2}}`, `{"a": "3"}`, true},
		{`{"a": {"$gt": 3}}`, `{"a": "3"}`, false},
		{`{"a": {"$gte": "3"}}`, `{"a": 3}`, true},
		{`{"a": {"$lt": 1.5}}`, `{"a": 1}`, true},
		{`{"a": {"$lte": 0}}`, `{"a": 1}`, false},
		{`{"a": {"$gt": 0}}`, `{}`, false},
		{`{"a": {"$ne": "x"}}`, `{}`, true},
		{`{"a": {"$ne": "x"}}`, `{"a": "y"}`, true},
		{`{"a": {"$ne": "x"}}`, `{"a": "x"}`, false},
		{`{"a": {"$contains": "ell"}}`, `{"a": "hello"}`, true},
		{`{"a": {"$contains": "z"}}`, `{"a": "hello"}`, false},
		{`{"a": {"$some": {"n": 2}}}`, `{"a": [{"n": 1}, {"n": 2}]}`, true},
		{`{"a": {"$some": {"n": 3}}}`, `{"a": [{"n": 1}, {"n": 2}]}`, false},
		{`{"a": {"$nope": 1}}`, `{"a": 1}`, false},
		{`[{"x": true}]`, `[{"x": true, "y": 1}]`, true},
		{`{"n": "9223372036854775807"}`, `{"n": 9223372036854775806}`, false},
	} {
		err := match(decode(t, tc.expected), decode(t, tc.actual), true, "")
		if (err == nil) != tc.ok {
			t.Errorf("match(%s, %s) = %v, want ok=%v", tc.expected, tc.actual, err, tc.ok)
		}
	}
}

func TestSubstituteAndLookup(t *testing.T) {
	vars := map[string]any{"user": "u1", "n": json.Number("7"), "obj": map[string]any{"k": "v"}}
	got, err := substitute(decode(t, `{"parent": "users/${user}", "n": "${n}", "s": "at ${n}", "o": "${obj}", "${user}": 1}`), vars)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(got)
	if want := `{"${user}":1,"n":7,"o":{"k":"v"},"parent":"users/u1","s":"at 7"}`; string(data) != want {
		t.Fatalf("substitute: %s, want %s", data, want)
	}
	if _, err := substitute("users/${nobody}", vars); err == nil {
		t.Fatal("an unknown placeholder was accepted")
	}
	value, err := lookup(decode(t, `[{"memory": {"name": "m"}}]`), "0.memory.name")
	if err != nil || value != "m" {
		t.Fatalf("lookup: %v, %v", value, err)
	}
	if _, err := lookup(decode(t, `{"a": [1]}`), "a.1"); err == nil {
		t.Fatal("lookup past the end of an array")
	}
}
