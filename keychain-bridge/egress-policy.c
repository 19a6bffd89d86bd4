/* egress-policy.c — presets, allow/deny rules with wildcards and ports, JSON files.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-policy.h"

#include "egress-private.h"
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>

typedef struct {
        char *pattern; /* normalised text, as listed and saved */
        char *host; /* canonical host; for wildcards the suffix after "*." */
        CorralHostKind kind;
        gboolean wildcard;
        guint16 port; /* 0: any port */
} Rule;

struct _CorralEgressPolicy {
        CorralEgressPreset preset;
        GPtrArray *allow; /* of Rule */
        GPtrArray *deny;
        GPtrArray *allow_text; /* of char*, borrowed from the rules */
        GPtrArray *deny_text;
        CorralPolicy *managed; /* nullable: the organisation's network keys, over the rules */
};

static const char *const preset_names[] = { "none", "package-managers", "allowlist", "open-web" };

/* What "package managers only" opens: the public registries of common languages and Debian. */
static const char *const package_hosts[] = {
        "pypi.org",       "files.pythonhosted.org", "registry.npmjs.org",    "registry.yarnpkg.com",
        "crates.io",      "static.crates.io",       "index.crates.io",       "proxy.golang.org",
        "sum.golang.org", "rubygems.org",           "repo.maven.apache.org", "repo1.maven.org",
        "deb.debian.org", "security.debian.org",
};

const char *
corral_egress_preset_to_string (CorralEgressPreset preset)
{
        g_return_val_if_fail (preset <= CORRAL_EGRESS_PRESET_OPEN_WEB, "none");
        return preset_names[preset];
}

gboolean
corral_egress_preset_from_string (const char *s, CorralEgressPreset *ret_preset)
{
        for (gsize i = 0; i < G_N_ELEMENTS (preset_names); i++) {
                if (g_strcmp0 (s, preset_names[i]) == 0) {
                        *ret_preset = (CorralEgressPreset) i;
                        return TRUE;
                }
        }
        return FALSE;
}

static void
rule_free (gpointer p)
{
        Rule *r = p;

        g_free (r->pattern);
        g_free (r->host);
        g_free (r);
}

CorralEgressPolicy *
corral_egress_policy_new (CorralEgressPreset preset)
{
        CorralEgressPolicy *p = g_atomic_rc_box_new0 (CorralEgressPolicy);

        p->preset = preset;
        p->allow = g_ptr_array_new_with_free_func (rule_free);
        p->deny = g_ptr_array_new_with_free_func (rule_free);
        p->allow_text = g_ptr_array_new ();
        p->deny_text = g_ptr_array_new ();
        return p;
}

CorralEgressPolicy *
corral_egress_policy_ref (CorralEgressPolicy *policy)
{
        return g_atomic_rc_box_acquire (policy);
}

static void
policy_clear (gpointer data)
{
        CorralEgressPolicy *p = data;

        g_ptr_array_unref (p->allow_text);
        g_ptr_array_unref (p->deny_text);
        g_ptr_array_unref (p->allow);
        g_ptr_array_unref (p->deny);
        g_clear_pointer (&p->managed, corral_policy_unref);
}

void
corral_egress_policy_unref (CorralEgressPolicy *policy)
{
        if (policy)
                g_atomic_rc_box_release_full (policy, policy_clear);
}

CorralEgressPreset
corral_egress_policy_get_preset (const CorralEgressPolicy *policy)
{
        return policy->preset;
}

void
corral_egress_policy_set_preset (CorralEgressPolicy *policy, CorralEgressPreset preset)
{
        policy->preset = preset;
}

const GPtrArray *
corral_egress_policy_get_rules (const CorralEgressPolicy *policy, gboolean allow)
{
        return allow ? policy->allow_text : policy->deny_text;
}

static Rule *
rule_parse (const char *pattern, GError **error)
{
        g_autoptr (GError) local = NULL;
        Rule *r;
        gboolean wildcard = g_str_has_prefix (pattern, "*.");
        const char *rest = wildcard ? pattern + 2 : pattern;
        g_autofree char *host = NULL;
        CorralHostKind kind;
        guint16 port = 0;

        if (strlen (pattern) > CORRAL_HOST_MAX + 8 ||
            !corral_egress_parse_authority (rest, -1, 0, &kind, &host, &port, NULL)) {
                port = 0;
                if (!corral_egress_parse_host (rest, -1, TRUE, &kind, &host, &local)) {
                        g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     _ ("Invalid host rule “%s”: %s"), pattern, local->message);
                        return NULL;
                }
        }
        if (wildcard && kind != CORRAL_HOST_NAME) {
                g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                             _ ("Invalid host rule “%s”: wildcards apply to names only"), pattern);
                return NULL;
        }
        r = g_new0 (Rule, 1);
        r->wildcard = wildcard;
        r->kind = kind;
        r->port = port;
        r->host = g_steal_pointer (&host);
        if (port) {
                g_autofree char *a = corral_egress_format_authority (r->host, kind, port);
                r->pattern = g_strconcat (wildcard ? "*." : "", a, NULL);
        } else {
                r->pattern = g_strconcat (wildcard ? "*." : "", kind == CORRAL_HOST_IPV6 ? "[" : "",
                                          r->host, kind == CORRAL_HOST_IPV6 ? "]" : "", NULL);
        }
        return r;
}

static void
remove_pattern (GPtrArray *rules, GPtrArray *text, const char *pattern)
{
        for (guint i = 0; i < rules->len; i++) {
                Rule *r = g_ptr_array_index (rules, i);

                if (g_str_equal (r->pattern, pattern)) {
                        g_ptr_array_remove_index (text, i);
                        g_ptr_array_remove_index (rules, i);
                        return;
                }
        }
}

gboolean
corral_egress_policy_add_rule (CorralEgressPolicy *policy,
                               gboolean allow,
                               const char *pattern,
                               GError **error)
{
        Rule *r = rule_parse (pattern, error);
        GPtrArray *rules = allow ? policy->allow : policy->deny;
        GPtrArray *text = allow ? policy->allow_text : policy->deny_text;

        if (!r)
                return FALSE;
        if (policy->allow->len + policy->deny->len >= CORRAL_EGRESS_MAX_RULES) {
                rule_free (r);
                g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_TOO_LARGE,
                             _ ("Too many host rules (at most %d)"), CORRAL_EGRESS_MAX_RULES);
                return FALSE;
        }
        remove_pattern (allow ? policy->deny : policy->allow,
                        allow ? policy->deny_text : policy->allow_text, r->pattern);
        remove_pattern (rules, text, r->pattern);
        g_ptr_array_add (rules, r);
        g_ptr_array_add (text, r->pattern);
        return TRUE;
}

CorralEgressPolicy *
corral_egress_policy_copy (const CorralEgressPolicy *policy)
{
        CorralEgressPolicy *p = corral_egress_policy_new (policy->preset);

        for (guint i = 0; i < policy->allow->len; i++)
                corral_egress_policy_add_rule (p, TRUE, g_ptr_array_index (policy->allow_text, i),
                                               NULL);
        for (guint i = 0; i < policy->deny->len; i++)
                corral_egress_policy_add_rule (p, FALSE, g_ptr_array_index (policy->deny_text, i),
                                               NULL);
        corral_egress_policy_set_managed (p, policy->managed);
        return p;
}

void
corral_egress_policy_set_managed (CorralEgressPolicy *policy, CorralPolicy *managed)
{
        if (managed)
                corral_policy_ref (managed);
        g_clear_pointer (&policy->managed, corral_policy_unref);
        policy->managed = managed;
}

/* The organisation's layer ---------------------------------------------------------------------
 * Only locked keys count here (corral-policy.h): a default is where the person's own policy
 * starts, and the person's policy is the rest of this file. */

/* How wide a preset is: "none" and "allowlist" open only the allow rules. */
static guint
preset_rank (CorralEgressPreset preset)
{
        switch (preset) {
        case CORRAL_EGRESS_PRESET_NONE:
                return 0;
        case CORRAL_EGRESS_PRESET_ALLOWLIST:
                return 1;
        case CORRAL_EGRESS_PRESET_PACKAGE_MANAGERS:
                return 2;
        case CORRAL_EGRESS_PRESET_OPEN_WEB:
        default:
                return 3;
        }
}

/* The person's preset, narrowed to the widest the organisation allows. */
static CorralEgressPreset
effective_preset (const CorralEgressPolicy *policy)
{
        const char *name = NULL;
        CorralPolicySetting how;
        CorralEgressPreset cap;

        if (!policy->managed ||
            !corral_policy_get_string (policy->managed, "network.preset", &name, &how) ||
            !how.locked || !corral_egress_preset_from_string (name, &cap) ||
            preset_rank (cap) >= preset_rank (policy->preset))
                return policy->preset;
        return cap;
}

/* The candidate as the policy's host patterns read it: "HOST:PORT" ("[ADDR]:PORT" for IPv6,
 * which no pattern there names). */
static char *
managed_candidate (const char *host, CorralHostKind kind, guint16 port)
{
        return kind == CORRAL_HOST_IPV6 ? g_strdup_printf ("[%s]:%u", host, port)
                                        : g_strdup_printf ("%s:%u", host, port);
}

static gboolean
managed_denies (const CorralEgressPolicy *policy, const char *candidate)
{
        return policy->managed &&
               !corral_policy_allows (policy->managed, "network.deniedHosts", candidate, NULL);
}

/* network.allowedHosts, locked: the hosts the organisation opens (every file's list must name
 * the host). An unlocked list opens nothing: it is a suggestion for the person's own rules. */
static gboolean
managed_grants (const CorralEgressPolicy *policy, const char *candidate)
{
        CorralPolicySetting how;
        guint n = 0;

        if (!policy->managed ||
            !corral_policy_get_allow_lists (policy->managed, "network.allowedHosts", &n, &how) ||
            n == 0 || !how.locked)
                return FALSE;
        return corral_policy_allows (policy->managed, "network.allowedHosts", candidate, NULL);
}

/* network.personMayApproveHosts, locked to false: the person's own allow rules open nothing. */
static gboolean
person_may_approve (const CorralEgressPolicy *policy)
{
        CorralPolicySetting how;
        gboolean may = TRUE;

        if (policy->managed &&
            corral_policy_get_bool (policy->managed, "network.personMayApproveHosts", &may, &how) &&
            how.locked)
                return may;
        return TRUE;
}

/* Matching ------------------------------------------------------------------------------------ */

static gboolean
rule_matches (const Rule *r, const char *host, CorralHostKind kind, guint16 port)
{
        gsize hl, sl;

        if (r->port && r->port != port)
                return FALSE;
        if (!r->wildcard)
                return r->kind == kind && g_str_equal (r->host, host);
        if (kind != CORRAL_HOST_NAME)
                return FALSE;
        hl = strlen (host);
        sl = strlen (r->host);
        return hl > sl + 1 && host[hl - sl - 1] == '.' && g_str_equal (host + hl - sl, r->host);
}

static const Rule *
find_rule (GPtrArray *rules, const char *host, CorralHostKind kind, guint16 port)
{
        for (guint i = 0; i < rules->len; i++) {
                const Rule *r = g_ptr_array_index (rules, i);

                if (rule_matches (r, host, kind, port))
                        return r;
        }
        return NULL;
}

static gboolean preset_allows (CorralEgressPreset preset,
                               const char *host,
                               CorralHostKind kind,
                               guint16 port,
                               char **ret_rule);
static gboolean preset_decides (CorralEgressPreset preset,
                                const char *host,
                                CorralHostKind kind,
                                guint16 port,
                                char **ret_rule);

gboolean
corral_egress_policy_check (const CorralEgressPolicy *policy,
                            const char *host,
                            CorralHostKind kind,
                            guint16 port,
                            char **ret_rule)
{
        /* Only with an organisation's policy: this runs for every request. */
        g_autofree char *candidate = policy->managed ? managed_candidate (host, kind, port) : NULL;
        CorralEgressPreset preset = effective_preset (policy);
        const Rule *r;
        gboolean allowed;

        /* The organisation's denial beats everything; its grants beat the person's denials
         * only where it named the host itself. */
        if (managed_denies (policy, candidate)) {
                *ret_rule = g_strdup ("managed-deny");
                return FALSE;
        }
        if ((r = find_rule (policy->deny, host, kind, port))) {
                *ret_rule = g_strconcat ("deny:", r->pattern, NULL);
                return FALSE;
        }
        if (managed_grants (policy, candidate)) {
                *ret_rule = g_strdup ("managed-allow");
                return TRUE;
        }
        if ((r = find_rule (policy->allow, host, kind, port)) && person_may_approve (policy)) {
                *ret_rule = g_strconcat ("allow:", r->pattern, NULL);
                return TRUE;
        }
        allowed = preset_allows (preset, host, kind, port, ret_rule);
        /* What the person's own choice would have opened is said as the organisation's. */
        if (!allowed && (r || (preset != policy->preset &&
                               preset_allows (policy->preset, host, kind, port, NULL)))) {
                g_free (*ret_rule);
                *ret_rule = g_strdup (r ? "managed-no-approvals" : "managed-preset");
        }
        return allowed;
}

/* The preset's decision; rule (nullable) as corral_egress_policy_check() sets it. */
static gboolean
preset_allows (CorralEgressPreset preset,
               const char *host,
               CorralHostKind kind,
               guint16 port,
               char **ret_rule)
{
        g_autofree char *rule = NULL;
        gboolean allowed = preset_decides (preset, host, kind, port, &rule);

        if (ret_rule)
                *ret_rule = g_steal_pointer (&rule);
        return allowed;
}

static gboolean
preset_decides (CorralEgressPreset preset,
                const char *host,
                CorralHostKind kind,
                guint16 port,
                char **ret_rule)
{
        switch (preset) {
        case CORRAL_EGRESS_PRESET_OPEN_WEB:
                *ret_rule = g_strdup ("preset:open-web");
                return TRUE;
        case CORRAL_EGRESS_PRESET_PACKAGE_MANAGERS:
                for (gsize i = 0; i < G_N_ELEMENTS (package_hosts); i++) {
                        if (kind == CORRAL_HOST_NAME && g_str_equal (host, package_hosts[i]) &&
                            (port == 443 || port == 80)) {
                                *ret_rule = g_strdup ("preset:package-managers");
                                return TRUE;
                        }
                }
                *ret_rule = g_strdup ("default-deny");
                return FALSE;
        case CORRAL_EGRESS_PRESET_NONE:
                *ret_rule = g_strdup ("preset:none");
                return FALSE;
        case CORRAL_EGRESS_PRESET_ALLOWLIST:
        default:
                *ret_rule = g_strdup ("default-deny");
                return FALSE;
        }
}

gboolean
corral_egress_policy_allows_address (const CorralEgressPolicy *policy,
                                     GInetAddress *addr,
                                     guint16 port)
{
        g_autofree char *text = g_inet_address_to_string (addr);
        CorralHostKind kind = g_inet_address_get_family (addr) == G_SOCKET_FAMILY_IPV6
                                      ? CORRAL_HOST_IPV6
                                      : CORRAL_HOST_IPV4;
        g_autofree char *candidate = managed_candidate (text, kind, port);

        /* Only the person's exact rule opens a non-public address; the organisation can close
         * it, and can take the person's rules away. */
        if (find_rule (policy->deny, text, kind, port) || managed_denies (policy, candidate) ||
            !person_may_approve (policy))
                return FALSE;
        for (guint i = 0; i < policy->allow->len; i++) {
                const Rule *r = g_ptr_array_index (policy->allow, i);

                if (!r->wildcard && r->port == port && r->kind == kind &&
                    g_str_equal (r->host, text))
                        return TRUE;
        }
        return FALSE;
}

gboolean
corral_egress_policy_allows_host_alias (const CorralEgressPolicy *policy, guint16 port)
{
        g_autofree char *candidate =
                managed_candidate (CORRAL_EGRESS_HOST_ALIAS, CORRAL_HOST_NAME, port);

        if (find_rule (policy->deny, CORRAL_EGRESS_HOST_ALIAS, CORRAL_HOST_NAME, port) ||
            managed_denies (policy, candidate) || !person_may_approve (policy))
                return FALSE;
        for (guint i = 0; i < policy->allow->len; i++) {
                const Rule *r = g_ptr_array_index (policy->allow, i);

                if (!r->wildcard && r->port == port && r->kind == CORRAL_HOST_NAME &&
                    g_str_equal (r->host, CORRAL_EGRESS_HOST_ALIAS))
                        return TRUE;
        }
        return FALSE;
}

/* JSON ---------------------------------------------------------------------------------------- */

static gboolean
load_rules (CorralEgressPolicy *p, const cJSON *list, gboolean allow, GError **error)
{
        const cJSON *item;

        if (!list)
                return TRUE;
        if (!cJSON_IsArray (list)) {
                g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     _ ("Policy rules must be a list of strings"));
                return FALSE;
        }
        cJSON_ArrayForEach (item, list) {
                if (!cJSON_IsString (item)) {
                        g_set_error_literal (error, CORRAL_EGRESS_ERROR,
                                             CORRAL_EGRESS_ERROR_INVALID,
                                             _ ("Policy rules must be a list of strings"));
                        return FALSE;
                }
                if (!corral_egress_policy_add_rule (p, allow, item->valuestring, error))
                        return FALSE;
        }
        return TRUE;
}

static gboolean
check_keys (const cJSON *root, GError **error)
{
        const cJSON *item;

        cJSON_ArrayForEach (item, root) {
                if (!item->string ||
                    (!g_str_equal (item->string, "preset") &&
                     !g_str_equal (item->string, "allow") && !g_str_equal (item->string, "deny"))) {
                        g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     _ ("Unknown key in policy file"));
                        return FALSE;
                }
        }
        return TRUE;
}

CorralEgressPolicy *
corral_egress_policy_new_from_json (const char *data, gsize len, GError **error)
{
        g_autoptr (cJSON) root = NULL;
        g_autoptr (CorralEgressPolicy) p = NULL;
        const cJSON *preset;
        CorralEgressPreset value = CORRAL_EGRESS_PRESET_ALLOWLIST;

        /* A \u0000 escape would cut a rule short inside cJSON: refused like a raw NUL. */
        if (len > CORRAL_EGRESS_MAX_POLICY_BYTES || memchr (data, '\0', len) ||
            g_strstr_len (data, (gssize) len, "\\u0000") ||
            !g_utf8_validate (data, (gssize) len, NULL) ||
            !(root = cJSON_ParseWithLength (data, len)) || !cJSON_IsObject (root)) {
                g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     _ ("The policy file is not a JSON object"));
                return NULL;
        }
        if (!check_keys (root, error))
                return NULL;
        preset = cJSON_GetObjectItemCaseSensitive (root, "preset");
        if (preset && (!cJSON_IsString (preset) ||
                       !corral_egress_preset_from_string (preset->valuestring, &value))) {
                g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     _ ("Unknown network preset in policy file"));
                return NULL;
        }
        p = corral_egress_policy_new (value);
        if (!load_rules (p, cJSON_GetObjectItemCaseSensitive (root, "allow"), TRUE, error) ||
            !load_rules (p, cJSON_GetObjectItemCaseSensitive (root, "deny"), FALSE, error))
                return NULL;
        return g_steal_pointer (&p);
}

CorralEgressPolicy *
corral_egress_policy_load_file (const char *path, GError **error)
{
        g_autofree char *data = NULL;
        gsize len;

        if (!g_file_get_contents (path, &data, &len, error))
                return NULL;
        return corral_egress_policy_new_from_json (data, len, error);
}

static cJSON *
rules_json (GPtrArray *text)
{
        cJSON *a = cJSON_CreateArray ();

        for (guint i = 0; i < text->len; i++)
                cJSON_AddItemToArray (a, cJSON_CreateString (g_ptr_array_index (text, i)));
        return a;
}

char *
corral_egress_policy_to_json (const CorralEgressPolicy *policy)
{
        g_autoptr (cJSON) root = cJSON_CreateObject ();
        char *s, *ret;

        cJSON_AddStringToObject (root, "preset", corral_egress_preset_to_string (policy->preset));
        cJSON_AddItemToObject (root, "allow", rules_json (policy->allow_text));
        cJSON_AddItemToObject (root, "deny", rules_json (policy->deny_text));
        s = cJSON_Print (root);
        ret = g_strconcat (s, "\n", NULL);
        cJSON_free (s);
        return ret;
}

gboolean
corral_egress_policy_save_file (const CorralEgressPolicy *policy, const char *path, GError **error)
{
        g_autofree char *json = corral_egress_policy_to_json (policy);

        /* g_file_set_contents replaces atomically: a reloading proxy never reads half a file. */
        return g_file_set_contents_full (path, json, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                         error);
}
