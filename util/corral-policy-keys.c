/* corral-policy-keys.c — the managed policy's key table, and how each kind of text in it is
 * checked and matched (corral-policy.h). data/managed-policy.schema.json says the same for
 * people and editors; tests/unit/test-policy.c keeps the two equal.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy-private.h"

#include <string.h>

static const char *const modes[] = { "ro", "rw-nodelete", "rw", NULL };
/* Narrowest first: "none" and "allowlist" reach only allow rules (none says so as "internet
 * off"), "package-managers" adds the package hosts, "open-web" every public host. */
static const char *const presets[] = { "none", "allowlist", "package-managers", "open-web", NULL };

static const CorralPolicyMember folder_mode_members[] = {
        { "folder", CORRAL_POLICY_MEMBER_STRING, CORRAL_POLICY_FORMAT_FOLDER, TRUE, 0,
          N_ ("An absolute folder; the limit applies to it and to everything inside it.") },
        { "maxMode", CORRAL_POLICY_MEMBER_STRING, CORRAL_POLICY_FORMAT_MODE, TRUE, 0,
          N_ ("The widest mode for that folder: ro, rw-nodelete or rw.") },
        { NULL },
};

static const CorralPolicyMember binding_members[] = {
        { "name", CORRAL_POLICY_MEMBER_STRING, CORRAL_POLICY_FORMAT_NAME, TRUE, 0,
          N_ ("The credential’s name; its secret is stored in the keychain under this name.") },
        { "hosts", CORRAL_POLICY_MEMBER_STRING_LIST, CORRAL_POLICY_FORMAT_HOST, TRUE, 64,
          N_ ("The hosts the credential is sent to, such as api.example.com.") },
        { "header", CORRAL_POLICY_MEMBER_STRING, CORRAL_POLICY_FORMAT_HEADER, FALSE, 0,
          N_ ("The HTTP header that carries it, such as Authorization.") },
        { NULL },
};

static const CorralPolicyMember server_members[] = {
        { "name", CORRAL_POLICY_MEMBER_STRING, CORRAL_POLICY_FORMAT_NAME, TRUE, 0,
          N_ ("The server’s name, as the assistant’s tools show it.") },
        { "command", CORRAL_POLICY_MEMBER_STRING_LIST, CORRAL_POLICY_FORMAT_TEXT, TRUE, 64,
          N_ ("The program and its arguments, started on this computer.") },
        { "env", CORRAL_POLICY_MEMBER_STRING_MAP, CORRAL_POLICY_FORMAT_TEXT, FALSE, 64,
          N_ ("Environment variables set for the program.") },
        { NULL },
};

#define LIST(fmt, n) .format = CORRAL_POLICY_FORMAT_##fmt, .max_items = (n)

static const CorralPolicyKey keys[] = {
        { "minimumVersion", CORRAL_POLICY_KIND_VERSION,
          N_ ("The lowest Corral version allowed to run, such as 1.2.0; an older one starts no "
              "task.") },
        { "sharedFolders.allowedFolders", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Absolute folders that may be shared: a folder may be shared only if it is one of "
              "them or inside one."),
          LIST (FOLDER, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The folder %s cannot be shared: it is not inside a folder that may be "
                         "shared (set by your organisation).") },
        { "sharedFolders.deniedFolders", CORRAL_POLICY_KIND_DENY_LIST,
          N_ ("Absolute folders that may never be shared, nor any folder inside them."),
          LIST (FOLDER, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The folder %s cannot be shared: it is, or is inside, a folder that may "
                         "not be shared (set by your organisation).") },
        { "sharedFolders.maxMode", CORRAL_POLICY_KIND_ENUM,
          N_ ("The widest mode any folder may be shared in: ro (can read), rw-nodelete (can "
              "edit, but not delete) or rw (can edit)."),
          .values = modes },
        { "sharedFolders.folderModes", CORRAL_POLICY_KIND_OBJECT_LIST,
          N_ ("The widest mode for particular folders and what is inside them; the lowest "
              "limit that applies wins."),
          .max_items = CORRAL_POLICY_MAX_ITEMS, .members = folder_mode_members },
        { "sharedFolders.protectedPaths", CORRAL_POLICY_KIND_DENY_LIST,
          N_ ("Paths that stay read-only in every shared folder, in every mode, on top of "
              "Corral’s own list, such as deploy/."),
          LIST (PATTERN, CORRAL_POLICY_MAX_ITEMS) },
        { "sharedFolders.hiddenPaths", CORRAL_POLICY_KIND_DENY_LIST,
          N_ ("Paths the assistant cannot see at all in any shared folder, such as "
              "secrets.env."),
          LIST (PATTERN, CORRAL_POLICY_MAX_ITEMS) },
        { "network.preset", CORRAL_POLICY_KIND_ENUM,
          N_ ("The network preset, narrowest first: none, allowlist, package-managers or "
              "open-web; when locked, the widest one the person may choose."),
          .values = presets },
        { "network.allowedHosts", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Hosts the VM may reach, such as example.com or *.example.com."),
          LIST (HOST, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("%s is not one of the allowed hosts (set by your organisation).") },
        { "network.deniedHosts", CORRAL_POLICY_KIND_DENY_LIST,
          N_ ("Hosts the VM may never reach, whatever else allows them."),
          LIST (HOST, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("Connections to %s are blocked (set by your organisation).") },
        { "network.personMayApproveHosts", CORRAL_POLICY_KIND_BOOL,
          N_ ("Whether the person may allow hosts that the policy does not allow."),
          .restrictive = FALSE },
        { "credentials.allowedNames", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Keychain credentials a task may use, by name."),
          LIST (NAME, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The credential %s is not one of the allowed credentials (set by "
                         "your organisation).") },
        { "credentials.allowedHosts", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Hosts a credential may be sent to."), LIST (HOST, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("Credentials may not be sent to %s (set by your organisation).") },
        { "credentials.bindings", CORRAL_POLICY_KIND_OBJECT_LIST,
          N_ ("Credentials the organisation provides: a name, the hosts it is sent to and the "
              "header that carries it. The secret itself is stored in the keychain, never in "
              "this file."),
          .max_items = 64, .members = binding_members },
        { "providers.allowed", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Model providers that may be used: anthropic, openai-compatible."),
          LIST (PROVIDER, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The model provider %s is not allowed (set by your organisation).") },
        { "providers.baseUrl", CORRAL_POLICY_KIND_STRING,
          N_ ("The address of the model provider’s API: https://, or http:// to this computer "
              "(localhost, 127.0.0.1, [::1])."),
          .format = CORRAL_POLICY_FORMAT_URL },
        { "providers.allowedModels", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Models that may be used, by name."), LIST (NAME, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The model %s is not allowed (set by your organisation).") },
        { "mcp.allowedServers", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("MCP servers the assistant may use, by name."), LIST (NAME, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The MCP server %s is not allowed (set by your organisation).") },
        { "mcp.servers", CORRAL_POLICY_KIND_OBJECT_LIST,
          N_ ("MCP servers the organisation provides: a name, the command that starts it and "
              "its environment."),
          .max_items = 64, .members = server_members },
        { "mcp.personMayAddServers", CORRAL_POLICY_KIND_BOOL,
          N_ ("Whether the person may add MCP servers of their own."), .restrictive = FALSE },
        { "computerUse.allowed", CORRAL_POLICY_KIND_BOOL,
          N_ ("Whether the assistant may use a desktop in the VM: screenshots, clicks and "
              "typing."),
          .restrictive = FALSE },
        { "images.allowed", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Guest images that may be used, by name."), LIST (NAME, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("The image %s is not allowed (set by your organisation).") },
        { "images.required", CORRAL_POLICY_KIND_STRING,
          N_ ("The guest image every task must use, by name."),
          .format = CORRAL_POLICY_FORMAT_NAME },
        { "images.trustedKeys", CORRAL_POLICY_KIND_ALLOW_LIST,
          N_ ("Ed25519 public keys (32 bytes in base64) whose signatures on images are "
              "trusted."),
          LIST (ED25519_KEY, CORRAL_POLICY_MAX_ITEMS),
          .blocked = N_ ("Images signed with the key %s are not trusted (set by your "
                         "organisation).") },
        { "images.requireSigned", CORRAL_POLICY_KIND_BOOL,
          N_ ("Whether an image must be signed by a trusted key before it boots."),
          .restrictive = TRUE },
        { "vm.maxMemoryMib", CORRAL_POLICY_KIND_INT, N_ ("The most memory a VM may have, in MiB."),
          .min = 256, .max = 1048576 },
        { "vm.maxVcpus", CORRAL_POLICY_KIND_INT, N_ ("The most virtual CPUs a VM may have."),
          .min = 1, .max = 256 },
        { "audit.copyTo", CORRAL_POLICY_KIND_DENY_LIST,
          N_ ("Where a copy of every task’s audit log also goes: journal (the system "
              "journal)."),
          LIST (AUDIT_DESTINATION, 8) },
        { "audit.keepDays", CORRAL_POLICY_KIND_INT,
          N_ ("How many days audit logs are kept at least; the longest wins."), .min = 1,
          .max = 3650, .higher_wins = TRUE },
};

#undef LIST

const CorralPolicyKey *
corral_policy_keys (guint *ret_n)
{
        g_return_val_if_fail (ret_n != NULL, NULL);

        *ret_n = G_N_ELEMENTS (keys);
        return keys;
}

const CorralPolicyKey *
corral_policy_key_lookup (const char *name)
{
        g_return_val_if_fail (name != NULL, NULL);

        for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
                if (strcmp (keys[i].name, name) == 0)
                        return &keys[i];
        return NULL;
}

guint
policy_key_index (const CorralPolicyKey *key)
{
        g_assert (key >= keys && key < keys + G_N_ELEMENTS (keys));
        return (guint) (key - keys);
}

/* Formats ------------------------------------------------------------------------------------ */

/* Not empty, at most max bytes, UTF-8, no control character (C0, DEL, C1): a value shown in a
 * terminal can move nothing. */
static gboolean
text_ok (const char *text, gsize max)
{
        gsize len = strlen (text);

        if (len == 0 || len > max || !g_utf8_validate (text, (gssize) len, NULL))
                return FALSE;
        for (const char *p = text; *p; p = g_utf8_next_char (p))
                if (g_unichar_iscntrl (g_utf8_get_char (p)))
                        return FALSE;
        return TRUE;
}

static gboolean
in_set (const char *const *set, const char *text)
{
        return g_strv_contains (set, text);
}

static char *
folder_canonical (const char *text)
{
        g_autofree char *c = g_canonicalize_filename (text, "/");

        /* POSIX keeps a leading "//" apart; Linux does not, and neither do we. */
        if (g_str_has_prefix (c, "//"))
                return g_strdup (c + 1);
        return g_steal_pointer (&c);
}

/* The rules of fs-paths.c's pattern_parse (mounts/server/, a layer above util/, so restated
 * here): a relative path of at most 64 components, each neither empty, ".", ".." nor "*";
 * one trailing '/' is allowed. fs_path_rules_new checks the result again. */
static gboolean
pattern_ok (const char *text)
{
        gsize len = strlen (text);
        g_autofree char *trimmed = g_strndup (text, text[len - 1] == '/' ? len - 1 : len);
        g_auto (GStrv) parts = g_strsplit (trimmed, "/", -1);

        if (trimmed[0] == '\0' || g_strv_length (parts) > 64)
                return FALSE;
        for (guint i = 0; parts[i]; i++)
                if (parts[i][0] == '\0' || g_str_equal (parts[i], ".") ||
                    g_str_equal (parts[i], "..") || g_str_equal (parts[i], "*"))
                        return FALSE;
        return TRUE;
}

/* "NAME[:PORT]" into its parts; FALSE when PORT is there but not 1–65535. */
static gboolean
host_split (const char *text, char **ret_host, guint *ret_port)
{
        const char *colon = strrchr (text, ':');
        guint64 port = 0;

        if (colon && !g_ascii_string_to_unsigned (colon + 1, 10, 1, 65535, &port, NULL))
                return FALSE;
        *ret_host = colon ? g_strndup (text, (gsize) (colon - text)) : g_strdup (text);
        *ret_port = (guint) port;
        return TRUE;
}

/* "[*.]label(.label)*[:PORT]", labels of letters, digits, '-' and '_'. */
static gboolean
host_ok (const char *text)
{
        g_autofree char *host = NULL;
        g_auto (GStrv) labels = NULL;
        const char *name;
        guint port;

        if (!host_split (text, &host, &port))
                return FALSE;
        name = g_str_has_prefix (host, "*.") ? host + 2 : host;
        if (name[0] == '\0' || strlen (name) > 253)
                return FALSE;
        labels = g_strsplit (name, ".", -1);
        for (guint i = 0; labels[i]; i++) {
                gsize n = strlen (labels[i]);

                if (n == 0 || n > 63)
                        return FALSE;
                for (gsize k = 0; k < n; k++)
                        if (!g_ascii_isalnum (labels[i][k]) && labels[i][k] != '-' &&
                            labels[i][k] != '_')
                                return FALSE;
        }
        return TRUE;
}

/* A provider's address: https anywhere; plain http only to this computer. No user name or
 * password (a secret in a file everyone can read) and no fragment. */
static gboolean
url_ok (const char *text)
{
        g_autoptr (GUri) uri = g_uri_parse (text, G_URI_FLAGS_NONE, NULL);
        const char *scheme, *host;

        if (!uri || g_uri_get_userinfo (uri) || g_uri_get_fragment (uri))
                return FALSE;
        scheme = g_uri_get_scheme (uri);
        host = g_uri_get_host (uri);
        if (!host || !host[0])
                return FALSE;
        if (g_ascii_strcasecmp (scheme, "https") == 0)
                return TRUE;
        return g_ascii_strcasecmp (scheme, "http") == 0 &&
               (g_ascii_strcasecmp (host, "localhost") == 0 || g_str_equal (host, "127.0.0.1") ||
                g_str_equal (host, "::1"));
}

/* Standard base64 of 32 bytes: 43 characters and one '='. g_base64_decode skips what is not
 * base64, so the alphabet is checked first. */
static gboolean
ed25519_key_ok (const char *text)
{
        g_autofree guchar *raw = NULL;
        gsize len = 0;

        if (strlen (text) != 44 || text[43] != '=')
                return FALSE;
        for (guint i = 0; i < 43; i++)
                if (!g_ascii_isalnum (text[i]) && text[i] != '+' && text[i] != '/')
                        return FALSE;
        raw = g_base64_decode (text, &len);
        return len == 32;
}

/* RFC 9110's token. */
static gboolean
header_ok (const char *text)
{
        for (const char *p = text; *p; p++)
                if (!g_ascii_isalnum (*p) && !strchr ("!#$%&'*+-.^_`|~", *p))
                        return FALSE;
        return TRUE;
}

static gboolean
env_name_ok (const char *text)
{
        if (g_ascii_isdigit (text[0]))
                return FALSE;
        for (const char *p = text; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '_')
                        return FALSE;
        return TRUE;
}

gboolean
policy_format_check (CorralPolicyFormat format, const char *text, char **ret_text)
{
        static const char *const providers[] = { "anthropic", "openai-compatible", NULL };
        static const char *const destinations[] = { "journal", NULL };
        gboolean ok = FALSE;

        /* Command arguments and environment values may be empty; nothing else may. */
        if (format == CORRAL_POLICY_FORMAT_TEXT && text[0] == '\0') {
                *ret_text = g_strdup (text);
                return TRUE;
        }
        switch (format) {
        case CORRAL_POLICY_FORMAT_TEXT:
        case CORRAL_POLICY_FORMAT_PATTERN:
        case CORRAL_POLICY_FORMAT_FOLDER:
                ok = text_ok (text, CORRAL_POLICY_MAX_TEXT);
                break;
        case CORRAL_POLICY_FORMAT_NAME:
                ok = text_ok (text, 256);
                break;
        case CORRAL_POLICY_FORMAT_HOST:
                ok = text_ok (text, 260) && host_ok (text);
                break;
        case CORRAL_POLICY_FORMAT_URL:
                ok = text_ok (text, 2048) && url_ok (text);
                break;
        case CORRAL_POLICY_FORMAT_PROVIDER:
                ok = in_set (providers, text);
                break;
        case CORRAL_POLICY_FORMAT_ED25519_KEY:
                ok = ed25519_key_ok (text);
                break;
        case CORRAL_POLICY_FORMAT_AUDIT_DESTINATION:
                ok = in_set (destinations, text);
                break;
        case CORRAL_POLICY_FORMAT_HEADER:
                ok = text_ok (text, 128) && header_ok (text);
                break;
        case CORRAL_POLICY_FORMAT_ENV_NAME:
                ok = text_ok (text, 128) && env_name_ok (text);
                break;
        case CORRAL_POLICY_FORMAT_MODE:
                ok = in_set (modes, text);
                break;
        }
        if (ok && format == CORRAL_POLICY_FORMAT_PATTERN)
                ok = pattern_ok (text);
        if (ok && format == CORRAL_POLICY_FORMAT_FOLDER)
                ok = text[0] == '/';
        if (!ok)
                return FALSE;
        if (format == CORRAL_POLICY_FORMAT_FOLDER)
                *ret_text = folder_canonical (text);
        else if (format == CORRAL_POLICY_FORMAT_HOST)
                *ret_text = g_ascii_strdown (text, -1);
        else
                *ret_text = g_strdup (text);
        return TRUE;
}

/* Matching ----------------------------------------------------------------------------------- */

static gboolean
folder_matches (const char *entry, const char *candidate)
{
        g_autofree char *c = folder_canonical (candidate);
        gsize n = strlen (entry);

        if (g_str_equal (entry, "/"))
                return TRUE;
        return strncmp (c, entry, n) == 0 && (c[n] == '\0' || c[n] == '/');
}

static gboolean
host_matches (const char *entry, const char *candidate)
{
        g_autofree char *lower = g_ascii_strdown (candidate, -1);
        g_autofree char *e_host = NULL, *c_host = NULL;
        guint e_port, c_port;
        gsize e_len, c_len;

        if (!host_split (entry, &e_host, &e_port) || !host_split (lower, &c_host, &c_port))
                return FALSE;
        if (e_port && e_port != c_port)
                return FALSE;
        if (!g_str_has_prefix (e_host, "*."))
                return g_str_equal (e_host, c_host);
        /* "*.example.com": names below example.com, not example.com itself. */
        e_len = strlen (e_host + 1);
        c_len = strlen (c_host);
        return c_len > e_len && g_str_equal (c_host + c_len - e_len, e_host + 1);
}

gboolean
policy_format_matches (CorralPolicyFormat format, const char *entry, const char *candidate)
{
        switch (format) {
        case CORRAL_POLICY_FORMAT_FOLDER:
                return folder_matches (entry, candidate);
        case CORRAL_POLICY_FORMAT_HOST:
                return host_matches (entry, candidate);
        default:
                return g_str_equal (entry, candidate);
        }
}

/* Versions ----------------------------------------------------------------------------------- */

gboolean
policy_version_parse (const char *text, gboolean strict, guint64 ret_parts[3])
{
        const char *p = text;
        guint64 parts[3];

        for (guint i = 0; i < 3; i++) {
                guint digits = 0;

                parts[i] = 0;
                while (g_ascii_isdigit (*p) && digits < 7) {
                        parts[i] = parts[i] * 10 + (guint64) (*p++ - '0');
                        digits++;
                }
                if (digits == 0 || digits > 6 || (i < 2 && *p++ != '.'))
                        return FALSE;
        }
        if (strict && *p != '\0')
                return FALSE;
        memcpy (ret_parts, parts, sizeof parts);
        return TRUE;
}

int
policy_version_compare (const guint64 a[3], const guint64 b[3])
{
        for (guint i = 0; i < 3; i++)
                if (a[i] != b[i])
                        return a[i] < b[i] ? -1 : 1;
        return 0;
}
