package incident

// What the external tests (which run the fingerprint stage, so cannot be
// in this package) look at inside an Index.

var IsIdentityField = isIdentityField

func IdentitiesLen(x *Index) int { return len(x.identities) }

func KeysOf(x *Index) []string { return x.keys }
func ValuesLen(x *Index) int   { return len(x.byValue) }
