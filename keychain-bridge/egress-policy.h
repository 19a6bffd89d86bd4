/* egress-policy.h — the person's network policy for one session.
 *
 * A policy is a preset plus allow and deny rules. A rule is a host pattern with an optional port:
 * "api.example.com", "*.example.com" (any name below example.com, not example.com itself),
 * "api.example.com:8443", "127.0.0.1:8080", "[::1]:8080". Deny rules win over allow rules and
 * presets. Addresses that are not public (egress-addr.h) are refused after resolution unless an
 * allow rule names that exact address with that exact port.
 *
 * Policies are immutable once shared (refcounted); a change makes a new one that the proxy swaps
 * in atomically, so running sessions see it on their next decision.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-policy.h"
#include "egress-addr.h"

G_BEGIN_DECLS

typedef enum {
        CORRAL_EGRESS_PRESET_NONE, /* "none": no internet */
        CORRAL_EGRESS_PRESET_PACKAGE_MANAGERS, /* "package-managers" */
        CORRAL_EGRESS_PRESET_ALLOWLIST, /* "allowlist": only the allow rules */
        CORRAL_EGRESS_PRESET_OPEN_WEB, /* "open-web": any public address */
} CorralEgressPreset;

#define CORRAL_EGRESS_MAX_RULES 1024
#define CORRAL_EGRESS_MAX_POLICY_BYTES (256 * 1024)

typedef struct _CorralEgressPolicy CorralEgressPolicy;

const char *corral_egress_preset_to_string (CorralEgressPreset preset);
gboolean corral_egress_preset_from_string (const char *s, CorralEgressPreset *ret_preset);

CorralEgressPolicy *corral_egress_policy_new (CorralEgressPreset preset);
CorralEgressPolicy *corral_egress_policy_ref (CorralEgressPolicy *policy);
void corral_egress_policy_unref (CorralEgressPolicy *policy);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralEgressPolicy, corral_egress_policy_unref)

/* The organisation's policy (corral-policy.h; nullable: none), over the person's rules: its
 * locked network.deniedHosts refuse a host whatever allows it ("managed-deny"); its locked
 * network.allowedHosts open the hosts every list names ("managed-allow"; not the non-public
 * addresses or the host alias, which only the person's exact rules open); a locked
 * network.preset is the widest preset that applies ("managed-preset" when the person's own
 * would have opened the host); a locked network.personMayApproveHosts false makes the
 * person's allow rules open nothing ("managed-no-approvals"). Referenced; copies keep it. */
void corral_egress_policy_set_managed (CorralEgressPolicy *policy, CorralPolicy *managed);

/* (transfer full) a modifiable copy. */
CorralEgressPolicy *corral_egress_policy_copy (const CorralEgressPolicy *policy);
CorralEgressPreset corral_egress_policy_get_preset (const CorralEgressPolicy *policy);
void corral_egress_policy_set_preset (CorralEgressPolicy *policy, CorralEgressPreset preset);

/* Validates the pattern; an identical rule is not added twice; a rule of the other kind with the
 * same pattern is removed (the last command wins). */
gboolean corral_egress_policy_add_rule (CorralEgressPolicy *policy,
                                        gboolean allow,
                                        const char *pattern,
                                        GError **error);

/* {"preset": "...", "allow": [...], "deny": [...]}; unknown keys and wrong types are errors. */
CorralEgressPolicy *
corral_egress_policy_new_from_json (const char *data, gsize len, GError **error);
CorralEgressPolicy *corral_egress_policy_load_file (const char *path, GError **error);
char *corral_egress_policy_to_json (const CorralEgressPolicy *policy);
gboolean
corral_egress_policy_save_file (const CorralEgressPolicy *policy, const char *path, GError **error);

/* (transfer none) rules in order; each "pattern" as given, normalised. */
const GPtrArray *corral_egress_policy_get_rules (const CorralEgressPolicy *policy, gboolean allow);

/* The decision for a request to host:port (host canonical, from corral_egress_parse_host).
 * Always sets *ret_rule (transfer full) to the rule that decided: "deny:PATTERN",
 * "allow:PATTERN", "preset:NAME", "default-deny", or one of the organisation's (above). */
gboolean corral_egress_policy_check (const CorralEgressPolicy *policy,
                                     const char *host,
                                     CorralHostKind kind,
                                     guint16 port,
                                     char **ret_rule);

/* The name under which a VM reaches the host's own loopback (inside the VM, "localhost" is
 * the VM itself): for a development server on the person's computer. */
#define CORRAL_EGRESS_HOST_ALIAS "host.corral.internal"

/* TRUE when an allow rule names CORRAL_EGRESS_HOST_ALIAS with exactly this port (no wildcard,
 * no preset, no rule without a port opens it) and no deny rule matches. */
gboolean corral_egress_policy_allows_host_alias (const CorralEgressPolicy *policy, guint16 port);

/* TRUE when a non-public address may be used: an allow rule names exactly this address and this
 * port and no deny rule matches it. */
gboolean corral_egress_policy_allows_address (const CorralEgressPolicy *policy,
                                              GInetAddress *addr,
                                              guint16 port);

G_END_DECLS
