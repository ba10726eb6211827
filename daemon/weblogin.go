package daemon

import (
	"net/http"
	"time"
)

// verifyLogin checks the credentials of the page's login form as the API
// checks a request's, through the same code (and its limits on failed
// tries): a user and password, or the API token when there is no user.
// The probe keeps r's address and forwarding header and nothing else of
// it. wait is how long a client that tried too often must wait.
func (a *authenticator) verifyLogin(r *http.Request, user, secret string) (bool, time.Duration) {
	probe := r.Clone(r.Context())
	probe.Header = http.Header{"X-Forwarded-For": r.Header.Values("X-Forwarded-For")}
	if user == "" {
		probe.Header.Set("Authorization", "Bearer "+secret)
	} else {
		probe.SetBasicAuth(user, secret)
	}
	v, wait := a.authenticate(probe)
	return v == accepted, wait
}
