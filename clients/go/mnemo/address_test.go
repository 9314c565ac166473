package mnemo_test

import (
	"strings"
	"testing"

	"mnemo.dev/clients/go/mnemo"
	"mnemo.dev/clients/go/mnemov1"
)

// One address format for every client and the CLI: host:port, http://host:port
// (plaintext) and https://host:port (TLS).
func TestAnyFormOfTheAddressReachesTheServer(t *testing.T) {
	target := shared(t)
	ctx := testContext(t)
	for _, form := range []string{target, "http://" + target, "http://" + target + "/"} {
		client := newClient(t, form)
		created, err := client.Memories.CreateMemory(ctx, &mnemov1.CreateMemoryRequest{
			Parent: "users/" + userID(t),
			Memory: &mnemov1.Memory{Text: "reached at " + form},
		})
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		if created.GetMemory().GetText() != "reached at "+form {
			t.Fatalf("%s: saved %q", form, created.GetMemory().GetText())
		}
	}
}

func TestTheFormsOfAnAddressAndWhatEachMeans(t *testing.T) {
	cases := []struct {
		address, target string
		tls             bool
	}{
		{"127.0.0.1:50051", "127.0.0.1:50051", false},
		{"http://127.0.0.1:50051/", "127.0.0.1:50051", false},
		{"https://mnemo.example.com", "mnemo.example.com:443", true},
		{"https://[::1]:8443", "[::1]:8443", true},
		{"dns:///mnemo.internal:50051", "dns:///mnemo.internal:50051", false},
	}
	for _, c := range cases {
		target, tls, err := mnemo.ParseTarget(c.address)
		if err != nil || target != c.target || tls != c.tls {
			t.Errorf("%s: got %q %v %v, want %q %v", c.address, target, tls, err, c.target, c.tls)
		}
	}
	if _, err := mnemo.New("http://127.0.0.1:50051/mnemo.v1"); err == nil ||
		!strings.Contains(err.Error(), "give the server's address, as http://host:port") {
		t.Fatalf("a URL with a path: %v", err)
	}
}
