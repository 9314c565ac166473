// Command k8scheck checks Kubernetes manifests the way the API server would
// decode them, without a cluster: every document is strictly decoded (an
// unknown or misspelled field, a wrong type: an error) into the official API
// types of k8s.io/api, and the references between them are checked: a
// Deployment's selector matches its pod template, a Service selects the
// pods of a Deployment, a probe names a port the container declares, a
// secretKeyRef or secret volume names a Secret key of the same files (init
// containers included).
//
//	go run . FILE...
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type manifests struct {
	secrets     map[string]*corev1.Secret
	deployments []*appsv1.Deployment
	jobs        []*batchv1.Job
	services    []*corev1.Service
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: k8scheck FILE...")
		os.Exit(2)
	}
	found := manifests{secrets: map[string]*corev1.Secret{}}
	var problems []string
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			if strings.TrimSpace(string(doc)) == "" {
				continue
			}
			if err := found.decode(doc); err != nil {
				problems = append(problems, fmt.Sprintf("%s document %d: %v", path, i+1, err))
			}
		}
	}
	problems = append(problems, found.references()...)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "k8scheck:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("k8scheck: %d secrets, %d deployments, %d jobs, %d services: ok\n",
		len(found.secrets), len(found.deployments), len(found.jobs), len(found.services))
}

func (m *manifests) decode(doc []byte) error {
	var h header
	if err := yaml.Unmarshal(doc, &h); err != nil {
		return err
	}
	switch h.APIVersion + " " + h.Kind {
	case "v1 Secret":
		var s corev1.Secret
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.secrets[s.Name] = &s
	case "apps/v1 Deployment":
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			return err
		}
		m.deployments = append(m.deployments, &d)
	case "batch/v1 Job":
		var j batchv1.Job
		if err := yaml.UnmarshalStrict(doc, &j); err != nil {
			return err
		}
		m.jobs = append(m.jobs, &j)
	case "v1 Service":
		var s corev1.Service
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.services = append(m.services, &s)
	default:
		return fmt.Errorf("unexpected kind %q of %q", h.Kind, h.APIVersion)
	}
	return nil
}

func (m *manifests) secretKey(name, key string) bool {
	s, ok := m.secrets[name]
	if !ok {
		return false
	}
	if _, ok := s.StringData[key]; ok {
		return true
	}
	_, ok = s.Data[key]
	return ok
}

func (m *manifests) pod(what string, spec corev1.PodSpec) []string {
	var problems []string
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		if c.Image == "" {
			problems = append(problems, fmt.Sprintf("%s container %s has no image", what, c.Name))
		}
		ports := map[int32]bool{}
		names := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.ContainerPort] = true
			names[p.Name] = true
		}
		for kind, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if probe != nil && probe.GRPC != nil && !ports[probe.GRPC.Port] {
				problems = append(problems, fmt.Sprintf("%s container %s: the %s probe's port %d is not declared", what, c.Name, kind, probe.GRPC.Port))
			}
		}
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && !m.secretKey(r.SecretKeyRef.Name, r.SecretKeyRef.Key) {
				problems = append(problems, fmt.Sprintf("%s: env %s names secret key %s/%s, which is not in the files", what, e.Name, r.SecretKeyRef.Name, r.SecretKeyRef.Key))
			}
		}
		volumes := map[string]bool{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = true
		}
		for _, mount := range c.VolumeMounts {
			if !volumes[mount.Name] {
				problems = append(problems, fmt.Sprintf("%s: mount %s has no volume", what, mount.Name))
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			for _, item := range v.Secret.Items {
				if !m.secretKey(v.Secret.SecretName, item.Key) {
					problems = append(problems, fmt.Sprintf("%s: volume %s names secret key %s/%s, which is not in the files", what, v.Name, v.Secret.SecretName, item.Key))
				}
			}
		}
	}
	return problems
}

func (m *manifests) references() []string {
	var problems []string
	for _, d := range m.deployments {
		what := "Deployment " + d.Name
		if d.Spec.Selector == nil || !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
			problems = append(problems, what+": its selector does not match its pod template")
		}
		problems = append(problems, m.pod(what, d.Spec.Template.Spec)...)
	}
	for _, j := range m.jobs {
		problems = append(problems, m.pod("Job "+j.Name, j.Spec.Template.Spec)...)
	}
	for _, s := range m.services {
		selected := false
		for _, d := range m.deployments {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				selected = true
				for _, p := range s.Spec.Ports {
					if p.TargetPort.StrVal != "" && !declares(d.Spec.Template.Spec, p.TargetPort.StrVal) {
						problems = append(problems, fmt.Sprintf("Service %s: target port %q is not a port of Deployment %s", s.Name, p.TargetPort.StrVal, d.Name))
					}
				}
			}
		}
		if !selected {
			problems = append(problems, "Service "+s.Name+" selects no Deployment's pods")
		}
	}
	return problems
}

func declares(spec corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}
