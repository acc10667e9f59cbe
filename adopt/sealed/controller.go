package sealed

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Controller names the Service in front of a Sealed Secrets controller,
// kubeseal's --controller-namespace and --controller-name.
type Controller struct {
	Namespace string
	Name      string
}

// Where kubeseal looks when it is given neither.
const (
	DefaultControllerNamespace = "kube-system"
	DefaultControllerName      = "sealed-secrets-controller"
)

func (c Controller) String() string { return "Service " + c.Namespace + "/" + c.Name }

// ParseController reads namespace/name, as the plan records a controller.
func ParseController(s string) (Controller, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return Controller{}, fmt.Errorf("%q does not name a Sealed Secrets controller's Service as namespace/name", s)
	}
	return Controller{Namespace: ns, Name: name}, nil
}

// Fingerprint names a controller's public key without revealing anything
// secret: "SHA256:" and the hex SHA-256 of its PKIX DER encoding. The plan
// records it, and apply seals only with a key of the same fingerprint.
func Fingerprint(pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + hex.EncodeToString(sum[:])
}

// ErrNotVerified is the controller's answer (409) to a SealedSecret it
// cannot decrypt: sealed with another key, for another namespace or name,
// or changed since.
var ErrNotVerified = errors.New("the Sealed Secrets controller cannot decrypt it")

// proxyName is the service proxy's name for the controller's HTTP API,
// http:<service>:<port name>. The port is the Service's first, as kubeseal
// takes it (the chart names it "http").
func (c Controller) proxyName(ctx context.Context, k kubernetes.Interface) (string, error) {
	svc, err := k.CoreV1().Services(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("no Sealed Secrets controller at %s: %w; name its Service if it is installed elsewhere", c, err)
		}
		return "", fmt.Errorf("read the Sealed Secrets controller's %s: %w", c, err)
	}
	if len(svc.Spec.Ports) == 0 {
		return "", fmt.Errorf("the Sealed Secrets controller's %s has no port", c)
	}
	return "http:" + c.Name + ":" + svc.Spec.Ports[0].Name, nil
}

// Cert fetches the controller's certificate through the API server's
// service proxy (GET /api/v1/namespaces/<ns>/services/http:<name>:<port>/proxy/v1/cert.pem)
// and returns its RSA public key. A certificate that is not valid now is
// refused.
func Cert(ctx context.Context, k kubernetes.Interface, c Controller) (*rsa.PublicKey, error) {
	name, err := c.proxyName(ctx, k)
	if err != nil {
		return nil, err
	}
	b, err := k.CoreV1().RESTClient().Get().Namespace(c.Namespace).Resource("services").SubResource("proxy").
		Name(name).Suffix("v1", "cert.pem").SetHeader("Accept", "application/x-pem-file, */*").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch the Sealed Secrets certificate from %s through the API server's service proxy: %w; check that the controller runs and that you may get services/proxy in %s", c, err, c.Namespace)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("the Sealed Secrets controller at %s answered /v1/cert.pem without a PEM certificate (%d bytes)", c, len(b))
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the Sealed Secrets certificate from %s: %w", c, err)
	}
	now := time.Now()
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return nil, fmt.Errorf("the Sealed Secrets certificate from %s is valid from %s to %s, not now; renew the controller's key", c,
			cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the Sealed Secrets certificate from %s holds a %T key, not RSA", c, cert.PublicKey)
	}
	return pub, nil
}

// Verify asks the controller whether it decrypts s (POST /v1/verify
// through the service proxy). The controller answers by status code
// alone: nil for 200, ErrNotVerified for 409. It allows 2 requests a
// second; client-go waits out its 429s (Retry-After) before this gives up.
func Verify(ctx context.Context, k kubernetes.Interface, c Controller, s *SealedSecret) error {
	name, err := c.proxyName(ctx, k)
	if err != nil {
		return err
	}
	body, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode %s: %w", s.Ref(), err)
	}
	var code int
	err = k.CoreV1().RESTClient().Post().Namespace(c.Namespace).Resource("services").SubResource("proxy").
		Name(name).Suffix("v1", "verify").SetHeader("Content-Type", "application/json").Body(body).Do(ctx).StatusCode(&code).Error()
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusConflict:
		return fmt.Errorf("verify %s with the controller at %s: %w; seal it again with the controller's current certificate", s.Ref(), c, ErrNotVerified)
	case code == http.StatusTooManyRequests:
		return fmt.Errorf("verify %s with the controller at %s: still rate-limited (2 a second) after client-go's retries; run again", s.Ref(), c)
	case err != nil:
		return fmt.Errorf("verify %s with the controller at %s: %w", s.Ref(), c, err)
	default:
		return fmt.Errorf("verify %s with the controller at %s: it answered %d", s.Ref(), c, code)
	}
}
