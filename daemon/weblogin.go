package daemon

import "net/http"

// verifyLogin checks the credentials of the page's login form as the API
// checks a request's, through the same code (and its limits on failed
// tries): a user and password, or the API token when there is no user.
// The probe keeps r's address and nothing else of it.
func (a *authenticator) verifyLogin(r *http.Request, user, secret string) bool {
	probe := r.Clone(r.Context())
	probe.Header = http.Header{}
	if user == "" {
		probe.Header.Set("Authorization", "Bearer "+secret)
	} else {
		probe.SetBasicAuth(user, secret)
	}
	v, _ := a.authenticate(probe)
	return v == accepted
}
