package conformance

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The JSON values here are what encoding/json decodes with UseNumber:
// nil, bool, json.Number, string, []any, map[string]any.

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// substitute replaces the ${name} placeholders in every string value of v
// (object keys are left as they are, as the Python runner does): a string that is exactly "${name}" becomes the variable's JSON
// value as is, otherwise the value's text is spliced in.
func substitute(v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if m := placeholder.FindStringSubmatch(x); m != nil && m[0] == x {
			value, ok := vars[m[1]]
			if !ok {
				return nil, fmt.Errorf("unknown placeholder ${%s}", m[1])
			}
			return value, nil
		}
		var unknown string
		out := placeholder.ReplaceAllStringFunc(x, func(s string) string {
			name := s[2 : len(s)-1]
			value, ok := vars[name]
			if !ok {
				unknown = name
				return s
			}
			return text(value)
		})
		if unknown != "" {
			return nil, fmt.Errorf("unknown placeholder ${%s}", unknown)
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			s, err := substitute(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			s, err := substitute(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	default:
		return v, nil
	}
}

// text is a value's text: a string as is, a number as written, else its JSON.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	default:
		data, _ := json.Marshal(x)
		return string(data)
	}
}

// lookup follows a dot-separated path (field names, 0-based indices).
func lookup(v any, path string) (any, error) {
	cur := v
	for _, part := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[part]
			if !ok {
				return nil, fmt.Errorf("path %q: no %q", path, part)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("path %q: no element %q in an array of %d", path, part, len(x))
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("path %q: %q is not in a scalar", path, part)
		}
	}
	if cur == nil {
		return nil, fmt.Errorf("path %q: null", path)
	}
	return cur, nil
}

// match checks actual (present: the key exists) against expected, as
// tests/conformance/README.md says; the error names the path that differs.
func match(expected, actual any, present bool, path string) error {
	if actual == nil {
		present = false
	}
	where := path
	if where == "" {
		where = "the response"
	}
	switch e := expected.(type) {
	case nil:
		if present {
			return fmt.Errorf("%s: want absent, got %s", where, text(actual))
		}
		return nil
	case map[string]any:
		if len(e) == 1 {
			for key, arg := range e {
				if strings.HasPrefix(key, "$") {
					return matcher(key, arg, actual, present, where, path)
				}
			}
		}
		if !present {
			return fmt.Errorf("%s: absent, want an object", where)
		}
		a, ok := actual.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an object", where, text(actual))
		}
		keys := make([]string, 0, len(e))
		for key := range e {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			value, has := a[key]
			if err := match(e[key], value, has, join(path, key)); err != nil {
				return err
			}
		}
		return nil
	case []any:
		var a []any
		if present {
			var ok bool
			if a, ok = actual.([]any); !ok {
				return fmt.Errorf("%s: got %s, want an array", where, text(actual))
			}
		}
		if len(a) != len(e) {
			return fmt.Errorf("%s: %d elements, want %d", where, len(a), len(e))
		}
		for i := range e {
			if err := match(e[i], a[i], true, join(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	default:
		if !present {
			return fmt.Errorf("%s: absent, want %s", where, text(expected))
		}
		if !scalarEqual(expected, actual) {
			return fmt.Errorf("%s: got %s, want %s", where, text(actual), text(expected))
		}
		return nil
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func matcher(name string, arg, actual any, present bool, where, path string) error {
	switch name {
	case "$any":
		want, _ := arg.(bool)
		if present != want {
			if want {
				return fmt.Errorf("%s: absent, want a value", where)
			}
			return fmt.Errorf("%s: got %s, want absent", where, text(actual))
		}
		return nil
	case "$len":
		n, err := strconv.Atoi(text(arg))
		if err != nil {
			return fmt.Errorf("%s: $len %s is not an integer", where, text(arg))
		}
		var a []any
		if present {
			var ok bool
			if a, ok = actual.([]any); !ok {
				return fmt.Errorf("%s: got %s, want an array", where, text(actual))
			}
		}
		if len(a) != n {
			return fmt.Errorf("%s: %d elements, want %d", where, len(a), n)
		}
		return nil
	case "$gt", "$gte", "$lt", "$lte":
		bound, ok := number(arg)
		if !ok {
			return fmt.Errorf("%s: %s %s is not a number", where, name, text(arg))
		}
		if !present {
			return fmt.Errorf("%s: absent, want a number %s %s", where, name, text(arg))
		}
		value, ok := number(actual)
		if !ok {
			return fmt.Errorf("%s: got %s, want a number", where, text(actual))
		}
		c := value.Cmp(bound)
		if (name == "$gt" && c <= 0) || (name == "$gte" && c < 0) || (name == "$lt" && c >= 0) || (name == "$lte" && c > 0) {
			return fmt.Errorf("%s: got %s, want %s %s", where, text(actual), name, text(arg))
		}
		return nil
	case "$ne":
		if match(arg, actual, present, path) == nil {
			return fmt.Errorf("%s: got %s, want anything else", where, text(actual))
		}
		return nil
	case "$contains":
		s, ok := actual.(string)
		if !present || !ok || !strings.Contains(s, text(arg)) {
			return fmt.Errorf("%s: got %s, want a string containing %q", where, text(actual), text(arg))
		}
		return nil
	case "$some":
		a, _ := actual.([]any)
		for i := range a {
			if match(arg, a[i], true, join(path, strconv.Itoa(i))) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: no element of %s matches %s", where, text(actual), text(arg))
	default:
		return fmt.Errorf("%s: unknown matcher %s", where, name)
	}
}

// number is a JSON number or a numeric string, exactly.
func number(v any) (*big.Rat, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return nil, false
	}
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	return r, ok && s != ""
}

// scalarEqual: a string and a number are equal when they are the same
// number ("3" and 3: int64 fields print as strings); otherwise equal values.
func scalarEqual(expected, actual any) bool {
	_, eNum := expected.(json.Number)
	_, aNum := actual.(json.Number)
	if eNum || aNum {
		e, ok1 := number(expected)
		a, ok2 := number(actual)
		return ok1 && ok2 && e.Cmp(a) == 0
	}
	return expected == actual
}
