/* test-policy.c — the managed-policy library (util/corral-policy.h): plain and default values,
 * every way values from several files combine, drop-in order, every refusal (named by file,
 * line and key), the digest, the JSON Schema against the key table, the folder limits, and
 * the shared-folder settings as fs-managed.c gives them today.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-cjson.h"
#include "corral-policy.h"
#include "fs-paths.h"

#define ASK_IT "Ask your IT department to correct it."

/* Parses texts (NULL-terminated) named /a.json, /b.json, /c.json. */
static CorralPolicy *
parse (GError **error, ...)
{
        static const char *const names[] = { "/a.json", "/b.json", "/c.json", "/d.json" };
        const char *texts[4];
        guint n = 0;
        va_list ap;

        va_start (ap, error);
        while (n < 4 && (texts[n] = va_arg (ap, const char *)))
                n++;
        va_end (ap);
        return corral_policy_parse_texts (n, names, texts, NULL, error);
}

static CorralPolicy *
parse_ok (const char *first, ...)
{
        static const char *const names[] = { "/a.json", "/b.json", "/c.json", "/d.json" };
        const char *texts[4] = { first };
        g_autoptr (GError) error = NULL;
        CorralPolicy *policy;
        guint n = 1;
        va_list ap;

        va_start (ap, first);
        while (n < 4 && (texts[n] = va_arg (ap, const char *)))
                n++;
        va_end (ap);
        policy = corral_policy_parse_texts (n, names, texts, NULL, &error);
        g_assert_no_error (error);
        g_assert_nonnull (policy);
        return policy;
}

static void
assert_sources (const CorralPolicySetting *how, const char *expected /* "a b" */)
{
        g_autofree char *joined = g_strjoinv (" ", (char **) how->sources);

        g_assert_cmpstr (joined, ==, expected);
}

/* Plain values are locked; {"value", "locked": false} is a default; null is not set. */
static void
test_plain_and_default (void)
{
        g_autoptr (CorralPolicy) p =
                parse_ok ("{\"vm\": {\"maxVcpus\": 4, \"maxMemoryMib\": {\"value\": 2048, "
                          "\"locked\": false}},"
                          " \"computerUse\": {\"allowed\": {\"value\": false, \"locked\": true}},"
                          " \"images\": {\"requireSigned\": {\"value\": true}, \"required\": null},"
                          " \"minimumVersion\": \"0.1.0\"}",
                          NULL);
        CorralPolicySetting how;
        gint64 n = -1;
        gboolean b = TRUE;
        const char *s = NULL;

        g_assert_true (corral_policy_get_int (p, "vm.maxVcpus", &n, &how));
        g_assert_cmpint (n, ==, 4);
        g_assert_true (how.locked);
        assert_sources (&how, "/a.json");
        g_assert_true (corral_policy_get_int (p, "vm.maxMemoryMib", &n, &how));
        g_assert_cmpint (n, ==, 2048);
        g_assert_false (how.locked);
        g_assert_true (corral_policy_get_bool (p, "computerUse.allowed", &b, &how));
        g_assert_false (b);
        g_assert_true (how.locked);
        /* "locked" left out: locked */
        g_assert_true (corral_policy_get_bool (p, "images.requireSigned", &b, &how));
        g_assert_true (b);
        g_assert_true (how.locked);
        /* null: not set, the caller's value untouched */
        s = "mine";
        g_assert_false (corral_policy_get_string (p, "images.required", &s, &how));
        g_assert_cmpstr (s, ==, "mine");
        g_assert_false (how.locked);
        g_assert_null (how.sources[0]);
        g_assert_true (corral_policy_get_string (p, "minimumVersion", &s, NULL));
        g_assert_cmpstr (s, ==, "0.1.0");
        n = 7;
        g_assert_false (corral_policy_get_int (p, "audit.keepDays", &n, NULL));
        g_assert_cmpint (n, ==, 7);
}

static void
test_combine_bool (void)
{
        g_autoptr (CorralPolicy) p = parse_ok (
                "{\"computerUse\": {\"allowed\": true}, \"images\": {\"requireSigned\": false}}",
                "{\"computerUse\": {\"allowed\": false}, \"images\": {\"requireSigned\": true}}",
                "{\"computerUse\": {\"allowed\": true}, \"mcp\": {\"personMayAddServers\": true}}",
                NULL);
        CorralPolicySetting how;
        gboolean b = TRUE;

        /* false wins for what is allowed, true for what is required */
        g_assert_true (corral_policy_get_bool (p, "computerUse.allowed", &b, &how));
        g_assert_false (b);
        assert_sources (&how, "/b.json");
        g_assert_true (corral_policy_get_bool (p, "images.requireSigned", &b, &how));
        g_assert_true (b);
        assert_sources (&how, "/b.json");
        g_assert_true (corral_policy_get_bool (p, "mcp.personMayAddServers", &b, &how));
        g_assert_true (b);
        assert_sources (&how, "/c.json");
}

static void
test_combine_int (void)
{
        g_autoptr (CorralPolicy) p =
                parse_ok ("{\"vm\": {\"maxVcpus\": 8}, \"audit\": {\"keepDays\": 30}}",
                          "{\"vm\": {\"maxVcpus\": 4}, \"audit\": {\"keepDays\": 90}}",
                          "{\"vm\": {\"maxVcpus\": 4}, \"audit\": {\"keepDays\": 7}}", NULL);
        CorralPolicySetting how;
        gint64 n = 0;

        /* maximums: the smallest; retention: the longest */
        g_assert_true (corral_policy_get_int (p, "vm.maxVcpus", &n, &how));
        g_assert_cmpint (n, ==, 4);
        assert_sources (&how, "/b.json /c.json");
        g_assert_true (corral_policy_get_int (p, "audit.keepDays", &n, &how));
        g_assert_cmpint (n, ==, 90);
        assert_sources (&how, "/b.json");
}

static void
test_combine_enum (void)
{
        g_autoptr (CorralPolicy) p =
                parse_ok ("{\"sharedFolders\": {\"maxMode\": \"rw\"}, \"network\": {\"preset\": "
                          "\"open-web\"}}",
                          "{\"sharedFolders\": {\"maxMode\": \"rw-nodelete\"},"
                          " \"network\": {\"preset\": \"allowlist\"}}",
                          "{\"network\": {\"preset\": \"package-managers\"}}", NULL);
        CorralPolicySetting how;
        const char *s = NULL;
        guint index = 99;

        g_assert_true (corral_policy_get_enum (p, "sharedFolders.maxMode", &index, &how));
        g_assert_cmpuint (index, ==, CORRAL_POLICY_MODE_RW_NODELETE);
        g_assert_true (corral_policy_get_string (p, "sharedFolders.maxMode", &s, NULL));
        g_assert_cmpstr (s, ==, "rw-nodelete");
        assert_sources (&how, "/b.json");
        /* allowlist is narrower than package-managers (which adds the package hosts). */
        g_assert_true (corral_policy_get_string (p, "network.preset", &s, &how));
        g_assert_cmpstr (s, ==, "allowlist");
        assert_sources (&how, "/b.json");
}

static void
test_combine_version (void)
{
        /* numbers, not text: 1.10.0 is above 1.9.9 */
        g_autoptr (CorralPolicy) p =
                parse_ok ("{\"minimumVersion\": \"1.2.3\"}", "{\"minimumVersion\": \"1.10.0\"}",
                          "{\"minimumVersion\": \"1.9.9\"}", NULL);
        CorralPolicySetting how;
        const char *s = NULL;

        g_assert_true (corral_policy_get_string (p, "minimumVersion", &s, &how));
        g_assert_cmpstr (s, ==, "1.10.0");
        assert_sources (&how, "/b.json");
}

static void
test_combine_string (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) same =
                parse_ok ("{\"providers\": {\"baseUrl\": \"https://llm.example.com/v1\"}}",
                          "{\"providers\": {\"baseUrl\": \"https://llm.example.com/v1\"}}", NULL);
        g_autoptr (CorralPolicy) locked =
                parse_ok ("{\"providers\": {\"baseUrl\": {\"value\": \"http://localhost:8080\", "
                          "\"locked\": false}}}",
                          "{\"providers\": {\"baseUrl\": \"https://llm.example.com/v1\"}}", NULL);
        g_autoptr (CorralPolicy) bad = NULL;
        CorralPolicySetting how;
        const char *s = NULL;

        g_assert_true (corral_policy_get_string (same, "providers.baseUrl", &s, &how));
        assert_sources (&how, "/a.json /b.json");
        /* the locked value counts; the default that disagrees does not */
        g_assert_true (corral_policy_get_string (locked, "providers.baseUrl", &s, &how));
        g_assert_cmpstr (s, ==, "https://llm.example.com/v1");
        assert_sources (&how, "/b.json");

        bad = parse (&error, "{\"images\": {\"required\": \"corral-standard\"}}", "{}",
                     "{\"images\": {\"required\": \"corral-minimal\"}}", NULL);
        g_assert_null (bad);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
        g_assert_nonnull (strstr (error->message, "/a.json"));
        g_assert_nonnull (strstr (error->message, "/c.json"));
        g_assert_nonnull (strstr (error->message, "images.required"));
        g_assert_true (g_str_has_suffix (error->message, ASK_IT));
}

static void
test_combine_deny (void)
{
        g_autoptr (CorralPolicy) p =
                parse_ok ("{\"sharedFolders\": {\"protectedPaths\": [\"deploy/\", \"a.env\"]}}",
                          "{\"sharedFolders\": {\"protectedPaths\": [\"a.env\", \"infra/\"],"
                          " \"hiddenPaths\": [\"secrets.env\"]}}",
                          NULL);
        const char *const *list = NULL;
        g_autofree char *joined = NULL;
        CorralPolicySetting how;

        g_assert_true (corral_policy_get_strv (p, "sharedFolders.protectedPaths", &list, &how));
        joined = g_strjoinv (",", (char **) list);
        g_assert_cmpstr (joined, ==, "deploy/,a.env,infra/");
        assert_sources (&how, "/a.json /b.json");
        g_assert_true (corral_policy_get_strv (p, "sharedFolders.hiddenPaths", &list, &how));
        g_assert_cmpstr (list[0], ==, "secrets.env");
        assert_sources (&how, "/b.json");
}

static void
assert_blocked (CorralPolicy *p, const char *key, const char *candidate)
{
        g_autoptr (GError) error = NULL;

        g_assert_false (corral_policy_allows (p, key, candidate, &error));
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        g_assert_nonnull (strstr (error->message, candidate));
        g_assert_nonnull (strstr (error->message, "(set by your organisation)"));
}

static void
assert_allowed (CorralPolicy *p, const char *key, const char *candidate)
{
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_policy_allows (p, key, candidate, &error));
        g_assert_no_error (error);
}

static void
test_combine_allow (void)
{
        g_autoptr (CorralPolicy) p = parse_ok (
                "{\"network\": {\"allowedHosts\": [\"api.example.com\", \"*.example.org\"],"
                " \"deniedHosts\": [\"bad.example.org\"]},"
                " \"providers\": {\"allowed\": [\"anthropic\", \"openai-compatible\"]}}",
                "{\"network\": {\"allowedHosts\": [\"API.example.com\", \"docs.example.org:443\"]},"
                " \"providers\": {\"allowed\": []}}",
                NULL);
        const CorralPolicyAllowList *lists;
        CorralPolicySetting how;
        guint n = 0;

        lists = corral_policy_get_allow_lists (p, "network.allowedHosts", &n, &how);
        g_assert_cmpuint (n, ==, 2);
        g_assert_cmpstr (lists[0].source, ==, "/a.json");
        g_assert_cmpstr (lists[1].source, ==, "/b.json");
        /* kept in lower case */
        g_assert_cmpstr (lists[1].items[0], ==, "api.example.com");
        assert_sources (&how, "/a.json /b.json");
        /* allowed only when every list allows it */
        assert_allowed (p, "network.allowedHosts", "api.example.com");
        assert_allowed (p, "network.allowedHosts", "Api.Example.COM:8443");
        assert_allowed (p, "network.allowedHosts", "docs.example.org:443");
        assert_blocked (p, "network.allowedHosts", "docs.example.org:80");
        assert_blocked (p, "network.allowedHosts", "www.example.org");
        /* "*.example.org" is below example.org, not example.org itself */
        assert_blocked (p, "network.allowedHosts", "example.org");
        assert_blocked (p, "network.deniedHosts", "bad.example.org");
        assert_allowed (p, "network.deniedHosts", "good.example.org");
        /* a list that is set but empty allows nothing */
        assert_blocked (p, "providers.allowed", "anthropic");
        /* a list nobody sets allows everything */
        assert_allowed (p, "mcp.allowedServers", "files");
        g_assert_null (corral_policy_get_allow_lists (p, "mcp.allowedServers", &n, NULL));
        g_assert_cmpuint (n, ==, 0);
}

static void
test_combine_objects (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) p = parse_ok (
                "{\"mcp\": {\"servers\": [{\"name\": \"files\", \"command\": [\"/usr/bin/f\"]}]}}",
                "{\"mcp\": {\"servers\": [{\"env\": {\"A\": \"1\"}, \"command\": [\"/usr/bin/g\","
                " \"--x\"], \"name\": \"git\"}]}}",
                NULL);
        g_autoptr (CorralPolicy) dup = NULL;
        g_autofree char *text = NULL;
        const cJSON *servers = NULL;
        CorralPolicySetting how;

        g_assert_true (corral_policy_get_objects (p, "mcp.servers", &servers, &how));
        assert_sources (&how, "/a.json /b.json");
        text = cJSON_PrintUnformatted (servers);
        /* in source order, members in the table's order */
        g_assert_cmpstr (text, ==,
                         "[{\"name\":\"files\",\"command\":[\"/usr/bin/f\"]},"
                         "{\"name\":\"git\",\"command\":[\"/usr/bin/g\",\"--x\"],"
                         "\"env\":{\"A\":\"1\"}}]");

        /* a name used by two files */
        dup = parse (
                &error,
                "{\"credentials\": {\"bindings\": [{\"name\": \"gh\", \"hosts\": [\"a.com\"]}]}}",
                "{\"credentials\": {\"bindings\": [{\"name\": \"gh\", \"hosts\": [\"b.com\"],"
                " \"header\": \"Authorization\"}]}}",
                NULL);
        g_assert_null (dup);
        g_assert_nonnull (strstr (error->message, "/a.json"));
        g_assert_nonnull (strstr (error->message, "/b.json"));
        g_assert_nonnull (strstr (error->message, "credentials.bindings"));
}

/* Any locked value beats every default, whatever the order. */
static void
test_locked_beats_default (void)
{
        g_autoptr (CorralPolicy) p = parse_ok (
                "{\"vm\": {\"maxVcpus\": {\"value\": 2, \"locked\": false}},"
                " \"network\": {\"deniedHosts\": {\"value\": [\"x.com\"], \"locked\": false}}}",
                "{\"vm\": {\"maxVcpus\": 8}}",
                "{\"vm\": {\"maxVcpus\": {\"value\": 1, \"locked\": false}}}", NULL);
        g_autoptr (CorralPolicy) defaults =
                parse_ok ("{\"vm\": {\"maxVcpus\": {\"value\": 2, \"locked\": false}}}",
                          "{\"vm\": {\"maxVcpus\": {\"value\": 3, \"locked\": false}}}", NULL);
        CorralPolicySetting how;
        gint64 n = 0;

        g_assert_true (corral_policy_get_int (p, "vm.maxVcpus", &n, &how));
        g_assert_cmpint (n, ==, 8);
        g_assert_true (how.locked);
        assert_sources (&how, "/b.json");
        g_assert_true (corral_policy_get_int (defaults, "vm.maxVcpus", &n, &how));
        g_assert_cmpint (n, ==, 2);
        g_assert_false (how.locked);
        /* a default list is where the person's own starts: it blocks nothing by itself */
        assert_allowed (p, "network.deniedHosts", "x.com");
}

static char *
write_file (const char *dir, const char *name, const char *text)
{
        char *path = g_build_filename (dir, name, NULL);

        g_assert_true (g_file_set_contents (path, text, -1, NULL));
        return path;
}

static void
remove_tree (const char *dir)
{
        const char *argv[] = { "rm", "-rf", "--", dir, NULL };

        g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                     NULL, NULL, NULL, NULL));
}

static void
test_drop_ins (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corral-policy-XXXXXX", NULL);
        g_autofree char *d = g_build_filename (dir, "managed.d", NULL);
        g_autofree char *main_path = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *y = g_build_filename (d, "y.json", NULL);
        g_autofree char *link = g_build_filename (d, "30-link.json", NULL);
        g_autofree char *a = NULL, *b = NULL, *m = NULL, *target = NULL, *joined = NULL;
        g_autoptr (CorralPolicy) p = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *saved_env = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        const char *const *sources;
        CorralPolicySetting how;
        gint64 n = 0;

        /* nothing there: no policy */
        p = corral_policy_load (main_path, &error);
        g_assert_no_error (error);
        g_assert_null (corral_policy_get_sources (p)[0]);
        /* SHA-256 of nothing */
        g_assert_cmpstr (corral_policy_get_digest (p), ==,
                         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        g_clear_pointer (&p, corral_policy_unref);

        g_assert_cmpint (g_mkdir (d, 0700), ==, 0);
        b = write_file (d, "20-b.json", "{\"vm\": {\"maxVcpus\": 2}}");
        a = write_file (d, "10-a.json", "{\"vm\": {\"maxVcpus\": 4}}");
        g_free (write_file (d, ".hidden.json", "not json"));
        g_free (write_file (d, "x.txt", "not json"));
        /* the main file missing, the drop-ins still apply */
        p = corral_policy_load (main_path, &error);
        g_assert_no_error (error);
        sources = corral_policy_get_sources (p);
        joined = g_strjoinv (" ", (char **) sources);
        {
                g_autofree char *expected = g_strjoin (" ", a, b, NULL);
                g_assert_cmpstr (joined, ==, expected);
        }
        g_clear_pointer (&p, corral_policy_unref);
        g_clear_pointer (&joined, g_free);

        m = write_file (dir, "managed.json", "{\"vm\": {\"maxVcpus\": 8}}");
        target = write_file (dir, "elsewhere", "{\"vm\": {\"maxMemoryMib\": 4096}}");
        g_assert_cmpint (symlink (target, link), ==, 0);
        g_setenv ("CORRAL_MANAGED_POLICY", main_path, TRUE);
        p = corral_policy_load_default (&error);
        g_assert_no_error (error);
        joined = g_strjoinv (" ", (char **) corral_policy_get_sources (p));
        {
                g_autofree char *expected = g_strjoin (" ", m, a, b, link, NULL);
                g_assert_cmpstr (joined, ==, expected);
        }
        g_assert_true (corral_policy_get_int (p, "vm.maxVcpus", &n, &how));
        g_assert_cmpint (n, ==, 2);
        assert_sources (&how, b);
        g_clear_pointer (&p, corral_policy_unref);

        /* a folder named like a drop-in is not silently skipped */
        g_assert_cmpint (g_mkdir (y, 0700), ==, 0);
        p = corral_policy_load (main_path, &error);
        g_assert_null (p);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
        g_assert_nonnull (strstr (error->message, y));
        g_assert_nonnull (strstr (error->message, "not a regular file"));
        g_clear_error (&error);
        g_assert_cmpint (g_rmdir (y), ==, 0);

        /* a link to nothing is not skipped either */
        g_assert_cmpint (g_unlink (target), ==, 0);
        p = corral_policy_load (main_path, &error);
        g_assert_null (p);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_UNREADABLE);
        g_assert_nonnull (strstr (error->message, link));
        g_clear_error (&error);
        g_assert_cmpint (g_unlink (link), ==, 0);

        /* at most 64 drop-ins (10-a and 20-b are two) */
        for (guint i = 0; i < 62; i++) {
                g_autofree char *name = g_strdup_printf ("50-%02u.json", i);
                g_free (write_file (d, name, "{}"));
        }
        p = corral_policy_load (main_path, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (g_strv_length ((char **) corral_policy_get_sources (p)), ==, 1 + 64);
        g_clear_pointer (&p, corral_policy_unref);
        g_free (write_file (d, "99-one-more.json", "{}"));
        p = corral_policy_load (main_path, &error);
        g_assert_null (p);
        g_assert_nonnull (strstr (error->message, "more than 64"));
        g_assert_nonnull (strstr (error->message, d));
        g_clear_error (&error);

        if (saved_env)
                g_setenv ("CORRAL_MANAGED_POLICY", saved_env, TRUE);
        else
                g_unsetenv ("CORRAL_MANAGED_POLICY");
        remove_tree (dir);
}

/* Every refusal: the file, the line, the key, and who can fix it. */
static void
test_errors (void)
{
        static const struct {
                const char *json;
                const char *line; /* "line N" */
                const char *part;
        } cases[] = {
                { "{\n\"vm\": {\n\"maxVcpus\": 4,,\n}}", "line 3", "not valid JSON" },
                { "{\"vm\": {}}\n\n x", "line 3", "not valid JSON" },
                { "", "line 1", "not valid JSON" },
                { "\n[1]", "line 2", "one JSON object" },
                { "{\n  \"vm\": {},\n  \"netwrk\": {}\n}", "line 3", "“netwrk”" },
                { "{\"vm\":\n {\"maxCpus\": 2}}", "line 2", "“vm.maxCpus”" },
                { "{\"vm\": 4}", "line 1", "“vm” on line 1 must be an object" },
                { "{\"vm\": {\"maxVcpus\": \"4\"}}", "line 1", "whole number from 1 to 256" },
                { "{\"vm\": {\n\n\"maxVcpus\": 0}}", "line 3", "“vm.maxVcpus”" },
                { "{\"vm\": {\"maxVcpus\": 257}}", "line 1", "whole number" },
                { "{\"vm\": {\"maxVcpus\": 1.5}}", "line 1", "whole number" },
                { "{\"vm\": {\"maxMemoryMib\": 100}}", "line 1", "from 256 to 1048576" },
                { "{\"audit\": {\"keepDays\": 1e999}}", "line 1", "whole number" },
                { "{\"computerUse\": {\"allowed\": \"no\"}}", "line 1", "true or false" },
                { "{\"sharedFolders\": {\"maxMode\": \"rwx\"}}", "line 1",
                  "one of ro, rw-nodelete, rw" },
                { "{\"network\": {\"preset\": \"all\"}}", "line 1", "“network.preset”" },
                { "{\"minimumVersion\": \"1.2\"}", "line 1", "version such as" },
                { "{\"minimumVersion\": \"1.2.3.4\"}", "line 1", "version" },
                { "{\"minimumVersion\": \"v1.2.3\"}", "line 1", "version" },
                { "{\"minimumVersion\": \"1.2.3456789\"}", "line 1", "version" },
                { "{\"providers\": {\"baseUrl\": \"http://example.com\"}}", "line 1", "https://" },
                { "{\"providers\": {\"baseUrl\": \"ftp://localhost/\"}}", "line 1", "https://" },
                { "{\"providers\": {\"baseUrl\": \"https://me:pw@example.com\"}}", "line 1",
                  "password" },
                { "{\"providers\": {\"allowed\": [\"openai\"]}}", "line 1",
                  "“providers.allowed[0]”" },
                { "{\"images\": {\"trustedKeys\": [\"abc\"]}}", "line 1", "Ed25519" },
                { "{\"images\": {\"trustedKeys\": "
                  "[\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA*=\"]}}",
                  "line 1", "Ed25519" },
                { "{\"images\": {\"trustedKeys\": "
                  "[\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"]}}",
                  "line 1", "Ed25519" },
                { "{\"credentials\": {\"bindings\": [\n{\"name\": \"gh\", \"hosts\": [\"a.com\"], "
                  "\"token\": \"ghp_x\"}]}}",
                  "line 1", "“credentials.bindings[0].token” on line 1 would put a secret" },
                { "{\"credentials\": {\"bindings\": [{\"name\": \"gh\", \"value\": \"x\", "
                  "\"hosts\": []}]}}",
                  "line 1", "secret" },
                { "{\"credentials\": {\"bindings\": [{\"name\": \"gh\"}]}}", "line 1",
                  "needs “hosts”" },
                { "{\"credentials\": {\"bindings\": [{\"name\": \"gh\", \"hosts\": []}]}}",
                  "line 1", "list of 1 to 64 entries" },
                { "{\"credentials\": {\"bindings\": [{\"name\": \"gh\", \"hosts\": [\"a.com\"], "
                  "\"header\": \"X Y\"}]}}",
                  "line 1", "HTTP header" },
                { "{\"credentials\": {\"bindings\": [{\"name\": \"a\", \"hosts\": [\"a.com\"]}, "
                  "{\"name\": \"a\", \"hosts\": [\"b.com\"]}]}}",
                  "line 1", "uses the name “a” twice" },
                { "{\"mcp\": {\"servers\": [{\"name\": \"x\", \"command\": [\"x\"], \"env\": "
                  "{\"1A\": \"b\"}}]}}",
                  "line 1", "environment variable" },
                { "{\"mcp\": {\"servers\": [{\"name\": \"x\", \"command\": [\"x\"], \"cwd\": "
                  "\"/\"}]}}",
                  "line 1", "“mcp.servers[0].cwd”" },
                { "{\"mcp\": {\"servers\": [7]}}", "line 1",
                  "“mcp.servers[0]” on line 1 must be "
                  "an object" },
                { "{\"mcp\": {\"allowedServers\": [\"a\\u001b[2Jb\"]}}", "line 1",
                  "without control characters" },
                { "{\"mcp\": {\"allowedServers\": [\"\"]}}", "line 1", "name" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"../etc\"]}}", "line 1",
                  "relative to the shared folder" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"/etc/passwd\"]}}", "line 1",
                  "relative" },
                { "{\"sharedFolders\": {\"hiddenPaths\": [\"a//b\"]}}", "line 1",
                  "“sharedFolders.hiddenPaths[0]”" },
                { "{\"sharedFolders\": {\"hiddenPaths\": \"x\"}}", "line 1",
                  "list of at most 256" },
                { "{\"sharedFolders\": {\"allowedFolders\": [\"home/me\"]}}", "line 1",
                  "absolute folder" },
                { "{\"sharedFolders\": {\"folderModes\": [{\"folder\": \"/srv\", \"maxMode\": "
                  "\"all\"}]}}",
                  "line 1", "one of ro, rw-nodelete, rw" },
                { "{\"network\": {\"allowedHosts\": [\"exa mple.com\"]}}", "line 1", "host name" },
                { "{\"network\": {\"allowedHosts\": [\"a.com:0\"]}}", "line 1", "host name" },
                { "{\"network\": {\"allowedHosts\": [\"*.\"]}}", "line 1", "host name" },
                { "{\"audit\": {\"copyTo\": [\"syslog\"]}}", "line 1", "“journal”" },
                { "{\"vm\": {\"maxVcpus\": {\"value\": 2, \"locked\": \"no\"}}}", "line 1",
                  "“vm.maxVcpus.locked”" },
                { "{\"vm\": {\"maxVcpus\": {\"value\": 2, \"lock\": false}}}", "line 1",
                  "“value” and “locked”" },
                { "{\"vm\": {\"maxVcpus\": {\"locked\": false}}}", "line 1", "“value”" },
                { "{\"vm\": {\"maxVcpus\": 2,\n\"maxVcpus\": 3}}", "line 2", "set twice" },
                { "{\"vm\": {},\n\"vm\": {}}", "line 2", "set twice" },
                { "{\"sharedFolders\": {\"hiddenPaths\": [\"a\\u0000b\"]}}", "line 1",
                  "not valid JSON" },
                { "{\"vm\":\n\n {\"maxVcpus\": \"\xff\"}}", "line 3", "not valid JSON" },
                { "{\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
                  "line 1", "nested too deeply" },
        };

        for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralPolicy) p = parse (&error, cases[i].json, NULL);
                g_autofree char *shown = g_strescape (cases[i].json, NULL);

                g_test_message ("%s", shown);
                g_assert_null (p);
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
                g_test_message ("%s", error->message);
                g_assert_true (g_str_has_prefix (error->message, "The managed policy /a.json "));
                g_assert_nonnull (strstr (error->message, cases[i].line));
                g_assert_nonnull (strstr (error->message, cases[i].part));
                g_assert_true (g_str_has_suffix (error->message, ASK_IT));
        }
}

static void
test_error_limits (void)
{
        static const char *const names[] = { "/a.json" };
        g_autoptr (GString) many = g_string_new ("{\"sharedFolders\": {\"protectedPaths\": [");
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) p = NULL;
        g_autofree char *long_name = g_strnfill (4097, 'a');
        g_autofree char *long_json = NULL;
        const char nul[] = "{\"vm\": {}}\0";
        const char *texts[1];
        gsize len;

        for (guint i = 0; i < CORRAL_POLICY_MAX_ITEMS; i++)
                g_string_append_printf (many, "%s\"p%u\"", i ? "," : "", i);
        g_string_append (many, "]}}");
        p = parse (&error, many->str, NULL);
        g_assert_no_error (error);
        g_clear_pointer (&p, corral_policy_unref);
        /* one more is too many */
        g_string_truncate (many, many->len - 3);
        g_string_append (many, ",\"one-more\"]}}");
        p = parse (&error, many->str, NULL);
        g_assert_null (p);
        g_assert_nonnull (strstr (error->message, "at most 256"));
        g_clear_error (&error);
        /* a pattern longer than fs-managed.c takes */
        long_json =
                g_strdup_printf ("{\"sharedFolders\": {\"protectedPaths\": [\"%s\"]}}", long_name);
        p = parse (&error, long_json, NULL);
        g_assert_null (p);
        g_assert_nonnull (strstr (error->message, "4096"));
        g_clear_error (&error);
        /* a NUL byte inside the text */
        texts[0] = nul;
        len = sizeof nul - 1;
        p = corral_policy_parse_texts (1, names, texts, &len, &error);
        g_assert_null (p);
        g_assert_nonnull (strstr (error->message, "not valid JSON"));
        g_clear_error (&error);
}

/* Files: too large, a FIFO (never blocks), unreadable. */
static void
test_file_errors (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corral-policy-XXXXXX", NULL);
        g_autofree char *big = g_build_filename (dir, "big.json", NULL);
        g_autofree char *fifo = g_build_filename (dir, "fifo.json", NULL);
        g_autofree char *locked = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) p = NULL;
        const char *paths[] = { NULL, NULL };

        g_assert_true (g_file_set_contents (big, "", 0, NULL));
        g_assert_cmpint (truncate (big, CORRAL_POLICY_MAX_SIZE + 1), ==, 0);
        p = corral_policy_load (big, &error);
        g_assert_null (p);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
        g_assert_nonnull (strstr (error->message, big));
        g_assert_nonnull (strstr (error->message, "larger than 1 MiB"));
        g_clear_error (&error);

        g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
        alarm (10);
        p = corral_policy_load (fifo, &error);
        alarm (0);
        g_assert_null (p);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
        g_assert_nonnull (strstr (error->message, "not a regular file"));
        g_clear_error (&error);

        /* policy check: each named file must be there */
        paths[0] = big;
        g_assert_cmpint (g_unlink (big), ==, 0);
        p = corral_policy_load_files (paths, &error);
        g_assert_null (p);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_UNREADABLE);
        g_assert_true (g_str_has_suffix (error->message, ASK_IT));
        g_clear_error (&error);

        if (geteuid () == 0) {
                g_test_message ("root reads any file: unreadable case skipped");
        } else {
                locked = g_build_filename (dir, "managed.json", NULL);
                g_assert_true (g_file_set_contents (locked, "{}", -1, NULL));
                g_assert_cmpint (g_chmod (locked, 0), ==, 0);
                p = corral_policy_load (locked, &error);
                g_assert_null (p);
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_UNREADABLE);
                g_assert_nonnull (strstr (error->message, locked));
                g_clear_error (&error);
        }
        remove_tree (dir);
}

static void
test_digest (void)
{
        static const char *const names[] = { "/a.json", "/b.json" };
        static const char *const other[] = { "/x.json", "/b.json" };
        const char *texts[] = { "{\"vm\": {\"maxVcpus\": 4}}", "{}" };
        const char *changed[] = { "{\"vm\": {\"maxVcpus\": 5}}", "{}" };
        g_autoptr (CorralPolicy) p1 = corral_policy_parse_texts (2, names, texts, NULL, NULL);
        g_autoptr (CorralPolicy) p2 = corral_policy_parse_texts (2, names, texts, NULL, NULL);
        g_autoptr (CorralPolicy) p3 = corral_policy_parse_texts (2, names, changed, NULL, NULL);
        g_autoptr (CorralPolicy) p4 = corral_policy_parse_texts (2, other, texts, NULL, NULL);
        g_autoptr (CorralPolicy) p5 = corral_policy_parse_texts (1, names, texts, NULL, NULL);
        const char *d1 = corral_policy_get_digest (p1);

        g_assert_cmpuint (strlen (d1), ==, 64);
        g_assert_cmpstr (d1, ==, corral_policy_get_digest (p2));
        g_assert_cmpstr (d1, !=, corral_policy_get_digest (p3));
        g_assert_cmpstr (d1, !=, corral_policy_get_digest (p4));
        g_assert_cmpstr (d1, !=, corral_policy_get_digest (p5));
}

static const char *
json_type (const CorralPolicyKey *key)
{
        switch (key->kind) {
        case CORRAL_POLICY_KIND_BOOL:
                return "boolean";
        case CORRAL_POLICY_KIND_INT:
                return "integer";
        case CORRAL_POLICY_KIND_ENUM:
        case CORRAL_POLICY_KIND_VERSION:
        case CORRAL_POLICY_KIND_STRING:
                return "string";
        default:
                return "array";
        }
}

static const char *
member_type (const CorralPolicyMember *m)
{
        return m->type == CORRAL_POLICY_MEMBER_STRING        ? "string"
               : m->type == CORRAL_POLICY_MEMBER_STRING_LIST ? "array"
                                                             : "object";
}

static const cJSON *
get (const cJSON *object, const char *name)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (object, name);

        if (!item)
                g_error ("schema: “%s” missing", name);
        return item;
}

static void
check_schema_members (const CorralPolicyKey *key, const cJSON *items)
{
        const cJSON *props = get (items, "properties"), *required = get (items, "required");
        guint n = 0, n_required = 0;

        g_assert_true (cJSON_IsFalse (get (items, "additionalProperties")));
        for (const CorralPolicyMember *m = key->members; m->name; m++, n++) {
                const cJSON *p = get (props, m->name);

                g_test_message ("%s.%s", key->name, m->name);
                g_assert_cmpstr (cJSON_GetStringValue (get (p, "type")), ==, member_type (m));
                g_assert_true (*cJSON_GetStringValue (get (p, "description")));
                if (m->type == CORRAL_POLICY_MEMBER_STRING_LIST)
                        g_assert_cmpint (get (p, "maxItems")->valueint, ==, m->max_items);
                if (m->required) {
                        g_assert_cmpstr (cJSON_GetStringValue (
                                                 cJSON_GetArrayItem (required, (int) n_required)),
                                         ==, m->name);
                        n_required++;
                }
        }
        g_assert_cmpint (cJSON_GetArraySize (props), ==, (int) n);
        g_assert_cmpint (cJSON_GetArraySize (required), ==, (int) n_required);
}

static void
check_schema_key (const CorralPolicyKey *key, const cJSON *s)
{
        const cJSON *any = get (s, "anyOf");
        const cJSON *plain = cJSON_GetArrayItem (any, 0);
        const cJSON *wrapped = cJSON_GetArrayItem (any, 1);
        const cJSON *value = get (get (wrapped, "properties"), "value");

        g_test_message ("%s", key->name);
        g_assert_true (*cJSON_GetStringValue (get (s, "description")));
        g_assert_cmpstr (cJSON_GetStringValue (get (plain, "type")), ==, json_type (key));
        /* the same value inside {"value", "locked"}, or null */
        g_assert_true (cJSON_Compare (plain, value, TRUE));
        g_assert_cmpstr (
                cJSON_GetStringValue (get (get (get (wrapped, "properties"), "locked"), "type")),
                ==, "boolean");
        g_assert_true (cJSON_IsFalse (get (wrapped, "additionalProperties")));
        g_assert_cmpstr (cJSON_GetStringValue (get (cJSON_GetArrayItem (any, 2), "type")), ==,
                         "null");
        g_assert_cmpint (cJSON_GetArraySize (any), ==, 3);
        if (key->kind == CORRAL_POLICY_KIND_INT) {
                g_assert_cmpint ((gint64) get (plain, "minimum")->valuedouble, ==, key->min);
                g_assert_cmpint ((gint64) get (plain, "maximum")->valuedouble, ==, key->max);
        }
        if (key->kind == CORRAL_POLICY_KIND_ENUM) {
                const cJSON *values = get (plain, "enum");
                guint n = g_strv_length ((char **) key->values);

                g_assert_cmpint (cJSON_GetArraySize (values), ==, (int) n);
                for (guint i = 0; i < n; i++)
                        g_assert_cmpstr (
                                cJSON_GetStringValue (cJSON_GetArrayItem (values, (int) i)), ==,
                                key->values[i]);
        }
        if (g_str_equal (json_type (key), "array")) {
                g_assert_cmpint (get (plain, "maxItems")->valueint, ==, key->max_items);
                g_assert_cmpstr (cJSON_GetStringValue (get (get (plain, "items"), "type")), ==,
                                 key->kind == CORRAL_POLICY_KIND_OBJECT_LIST ? "object" : "string");
        }
        if (key->kind == CORRAL_POLICY_KIND_OBJECT_LIST)
                check_schema_members (key, get (plain, "items"));
}

/* The example the package ships for IT (doc/examples/managed.json) is a valid policy that
 * locks something, so that copying it to /etc never stops Corral. */
static void
test_shipped_example (void)
{
        g_autofree char *path = g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "doc", "examples",
                                                  "managed.json", NULL);
        const char *paths[] = { path, NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) policy = corral_policy_load_files (paths, &error);
        guint mode = 0;
        CorralPolicySetting how;

        g_assert_no_error (error);
        g_assert_nonnull (policy);
        g_assert_true (corral_policy_get_enum (policy, "sharedFolders.maxMode", &mode, &how));
        g_assert_true (how.locked);
        g_assert_true (corral_policy_check_version (policy, NULL, &error));
}

/* data/managed-policy.schema.json and the key table say the same. */
static void
test_schema (void)
{
        g_autofree char *path = g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "data",
                                                  "managed-policy.schema.json", NULL);
        g_autofree char *text = NULL;
        g_autoptr (cJSON) schema = NULL;
        const cJSON *props, *item;
        const CorralPolicyKey *keys;
        guint n_keys, n_schema = 0;

        g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
        schema = cJSON_Parse (text);
        g_assert_nonnull (schema);
        g_assert_cmpstr (cJSON_GetStringValue (get (schema, "$schema")), ==,
                         "https://json-schema.org/draft/2020-12/schema");
        g_assert_true (cJSON_IsFalse (get (schema, "additionalProperties")));
        keys = corral_policy_keys (&n_keys);
        for (guint i = 0; i < n_keys; i++) {
                g_auto (GStrv) parts = g_strsplit (keys[i].name, ".", 2);
                const cJSON *s = get (schema, "properties");

                if (parts[1]) {
                        s = get (s, parts[0]);
                        g_assert_cmpstr (cJSON_GetStringValue (get (s, "type")), ==, "object");
                        g_assert_true (cJSON_IsFalse (get (s, "additionalProperties")));
                        g_assert_true (*cJSON_GetStringValue (get (s, "description")));
                        s = get (get (s, "properties"), parts[1]);
                } else {
                        s = get (s, parts[0]);
                }
                check_schema_key (&keys[i], s);
        }
        /* and nothing more */
        props = get (schema, "properties");
        cJSON_ArrayForEach (item, props) {
                const cJSON *inner = cJSON_GetObjectItemCaseSensitive (item, "properties");
                n_schema += inner ? (guint) cJSON_GetArraySize (inner) : 1;
        }
        g_assert_cmpuint (n_schema, ==, n_keys);
}

/* Each refusal sentence has one %s and no other directive; every key is described. */
static void
test_key_table (void)
{
        guint n;
        const CorralPolicyKey *keys = corral_policy_keys (&n);

        for (guint i = 0; i < n; i++) {
                const char *b = keys[i].blocked;

                g_test_message ("%s", keys[i].name);
                g_assert_true (keys[i].description && *keys[i].description);
                g_assert_true (corral_policy_key_lookup (keys[i].name) == &keys[i]);
                if (!b)
                        continue;
                g_assert_true (keys[i].kind == CORRAL_POLICY_KIND_ALLOW_LIST ||
                               keys[i].kind == CORRAL_POLICY_KIND_DENY_LIST);
                g_assert_nonnull (strstr (b, "%s"));
                g_assert_null (strchr (strstr (b, "%s") + 1, '%'));
                g_assert_true (strchr (b, '%') == strstr (b, "%s"));
        }
        g_assert_null (corral_policy_key_lookup ("vm"));
}

static void
assert_mode (CorralPolicy *p, const char *folder, int expected /* -1: refused */)
{
        g_autoptr (GError) error = NULL;
        CorralPolicyMode mode = 99;
        gboolean ok = corral_policy_max_mode_for_folder (p, folder, &mode, &error);

        g_test_message ("%s", folder);
        if (expected < 0) {
                g_assert_false (ok);
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
                g_assert_nonnull (strstr (error->message, folder));
                g_assert_nonnull (strstr (error->message, "set by your organisation"));
                g_assert_cmpint (mode, ==, 99);
                return;
        }
        g_assert_no_error (error);
        g_assert_true (ok);
        g_assert_cmpint (mode, ==, expected);
}

static void
test_max_mode (void)
{
        g_autoptr (CorralPolicy) none = parse_ok ("{}", NULL);
        g_autoptr (CorralPolicy) p = parse_ok (
                "{\"sharedFolders\": {\"allowedFolders\": [\"/home/me/\", \"/srv\"],"
                " \"deniedFolders\": [\"/home/me/.ssh\", \"/srv/secret\"],"
                " \"maxMode\": \"rw\","
                " \"folderModes\": [{\"folder\": \"/srv\", \"maxMode\": \"rw-nodelete\"},"
                "  {\"folder\": \"/srv/archive\", \"maxMode\": \"ro\"}]}}",
                "{\"sharedFolders\": {\"allowedFolders\": [\"/home\"],"
                " \"folderModes\": [{\"folder\": \"//srv/./archive/old/..\", \"maxMode\": "
                "\"rw\"}]}}",
                NULL);
        g_autoptr (CorralPolicy) ro = parse_ok (
                "{\"sharedFolders\": {\"maxMode\": \"ro\", \"folderModes\": [{\"folder\": \"/\","
                " \"maxMode\": \"rw\"}]}}",
                NULL);
        g_autoptr (CorralPolicy) defaults = parse_ok (
                "{\"sharedFolders\": {\"maxMode\": {\"value\": \"ro\", \"locked\": false}}}", NULL);

        assert_mode (none, "/anything", CORRAL_POLICY_MODE_RW);
        assert_mode (p, "/home/me", CORRAL_POLICY_MODE_RW);
        assert_mode (p, "/home/me/work/", CORRAL_POLICY_MODE_RW);
        assert_mode (p, "/home/me/.ssh", -1);
        assert_mode (p, "/home/me/.ssh/keys", -1);
        /* lexical: the caller resolves links; ".." is folded before matching */
        assert_mode (p, "/home/me/work/../.ssh", -1);
        /* a sibling whose name starts the same is not inside */
        assert_mode (p, "/home/me/.sshx", CORRAL_POLICY_MODE_RW);
        assert_mode (p, "/home/other", -1); /* not in the first file's list */
        assert_mode (p, "/srv", -1); /* not in the second file's list */
        assert_mode (p, "/etc", -1);
        assert_mode (ro, "/srv", CORRAL_POLICY_MODE_RO);
        /* a default is the person's starting point, not a limit */
        assert_mode (defaults, "/srv", CORRAL_POLICY_MODE_RW);
        {
                g_autoptr (CorralPolicy) srv =
                        parse_ok ("{\"sharedFolders\": {\"folderModes\": [{\"folder\": \"/srv\", "
                                  "\"maxMode\": \"rw-nodelete\"}, {\"folder\": \"/srv/archive\", "
                                  "\"maxMode\": \"ro\"}]}}",
                                  "{\"sharedFolders\": {\"folderModes\": [{\"folder\": "
                                  "\"//srv/./archive/old/..\", \"maxMode\": \"rw\"}], \"maxMode\": "
                                  "\"rw\"}}",
                                  NULL);
                assert_mode (srv, "/srv/work", CORRAL_POLICY_MODE_RW_NODELETE);
                assert_mode (srv, "/srv/archive/2020", CORRAL_POLICY_MODE_RO);
                assert_mode (srv, "/srv2", CORRAL_POLICY_MODE_RW);
        }
}

static void
test_version (void)
{
        g_autoptr (CorralPolicy) p = parse_ok ("{\"minimumVersion\": \"1.10.0\"}", NULL);
        g_autoptr (CorralPolicy) none = parse_ok ("{}", NULL);
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_policy_check_version (p, "1.10.0", NULL));
        g_assert_true (corral_policy_check_version (p, "2.0.0~beta", NULL));
        g_assert_true (corral_policy_check_version (none, NULL, NULL));
        g_assert_false (corral_policy_check_version (p, "1.9.12", &error));
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        g_assert_nonnull (strstr (error->message, "1.9.12"));
        g_assert_nonnull (strstr (error->message, "1.10.0"));
        g_assert_nonnull (strstr (error->message, "(set by your organisation)"));
        g_clear_error (&error);
        /* this build (meson's project version) is below 1.10.0 */
        g_assert_false (corral_policy_check_version (p, NULL, &error));
        g_assert_nonnull (strstr (error->message, CORRAL_VERSION));
        g_clear_error (&error);
        g_assert_false (corral_policy_check_version (p, "unknown", NULL));
}

static void
test_to_json (void)
{
        g_autoptr (CorralPolicy) p = parse_ok (
                "{\"vm\": {\"maxVcpus\": 4}, \"network\": {\"allowedHosts\": [\"a.com\"]}}",
                "{\"vm\": {\"maxMemoryMib\": {\"value\": 512, \"locked\": false}}}", NULL);
        g_autofree char *text = corral_policy_to_json (p);
        g_autoptr (cJSON) json = cJSON_Parse (text);
        const cJSON *settings = get (json, "settings"), *s;
        guint n_keys;

        corral_policy_keys (&n_keys);
        g_assert_cmpstr (cJSON_GetStringValue (get (json, "digest")), ==,
                         corral_policy_get_digest (p));
        g_assert_cmpint (cJSON_GetArraySize (get (json, "sources")), ==, 2);
        g_assert_cmpint (cJSON_GetArraySize (settings), ==, (int) n_keys);
        s = get (settings, "vm.maxVcpus");
        g_assert_true (cJSON_IsTrue (get (s, "set")));
        g_assert_cmpint (get (s, "value")->valueint, ==, 4);
        g_assert_true (cJSON_IsTrue (get (s, "locked")));
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetArrayItem (get (s, "sources"), 0)), ==,
                         "/a.json");
        s = get (settings, "vm.maxMemoryMib");
        g_assert_true (cJSON_IsFalse (get (s, "locked")));
        s = get (settings, "network.allowedHosts");
        s = cJSON_GetArrayItem (get (s, "value"), 0);
        g_assert_cmpstr (cJSON_GetStringValue (get (s, "source")), ==, "/a.json");
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetArrayItem (get (s, "allowed"), 0)), ==,
                         "a.com");
        s = get (settings, "audit.keepDays");
        g_assert_true (cJSON_IsFalse (get (s, "set")));
        g_assert_null (cJSON_GetObjectItem (s, "value"));
}

/* Whatever loads gives protected and hidden paths the file server accepts (fs-paths.h), and
 * what it would refuse does not load. */
static void
test_fs_paths_accepted (void)
{
        static const struct {
                const char *json;
                gboolean loads;
        } cases[] = {
                { "{}", TRUE },
                { "{\"sharedFolders\": {}}", TRUE },
                { "{\"sharedFolders\": {\"protectedPaths\": []}}", TRUE },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"deploy/\", \"a/b.env\", "
                  "\"*.code-workspace\"], \"hiddenPaths\": [\"secrets.env\", \".aws/\"]}}",
                  TRUE },
                { "{\"sharedFolders\": {\"protectedPaths\": null}}", TRUE },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"../etc\"]}}", FALSE },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"/etc/passwd\"]}}", FALSE },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"a//b\"]}}", FALSE },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"\"]}}", FALSE },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"./x\"]}}", FALSE },
                { "{\"sharedFolders\": {\"hiddenPaths\": [\"*\"]}}", FALSE },
                { "{\"sharedFolders\": {\"hiddenPaths\": [\"a/*/b\"]}}", FALSE },
                { "{\"sharedFolders\": {\"hiddenPaths\": [\"x/\"]}}", TRUE },
                { "{\"sharedFolders\": {\"hiddenPaths\": [\"/\"]}}", FALSE },
        };

        for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralPolicy) p = parse (&error, cases[i].json, NULL);
                static const char *const empty[] = { NULL };
                const char *const *protect = empty, *const *hide = empty;
                g_autoptr (FsPathRules) rules = NULL;

                g_test_message ("%s", cases[i].json);
                g_assert_cmpint (p != NULL, ==, cases[i].loads);
                if (!p)
                        continue;
                corral_policy_get_strv (p, "sharedFolders.protectedPaths", &protect, NULL);
                corral_policy_get_strv (p, "sharedFolders.hiddenPaths", &hide, NULL);
                rules = fs_path_rules_new (protect, hide, &error);
                g_assert_no_error (error);
                g_assert_nonnull (rules);
        }
}

static void
write_logs (const char *vm_dir)
{
        g_autofree char *a = g_build_filename (vm_dir, "audit.jsonl", NULL);
        g_autofree char *e = g_build_filename (vm_dir, "egress.jsonl", NULL);

        g_assert_cmpint (g_mkdir_with_parents (vm_dir, 0700), ==, 0);
        g_assert_true (g_file_set_contents (a, "{\"op\":\"write\"}\n", -1, NULL));
        g_assert_true (g_file_set_contents (e, "{\"host\":\"pypi.org\"}\n", -1, NULL));
}

static void
age (const char *dir, int days)
{
        g_autofree char *cmd = g_strdup_printf ("touch -d '%d days ago' '%s'/*.jsonl", days, dir);

        g_assert_cmpint (system (cmd), ==, 0);
}

/* audit.keepDays (SECURITY.md M11): a removed VM's audit logs are kept, in
 * STATE/corral/audit/NAME-STAMP/, and removed once older than the locked number of days; a
 * default (unlocked) keeps nothing; an unreadable policy keeps them, to be safe. */
static void
test_audit_keep (void)
{
        g_autofree char *state = g_dir_make_tmp ("corral-audit-keep-XXXXXX", NULL);
        g_autofree char *vm_dir = g_build_filename (state, "corral", "vms", "task-1", NULL);
        g_autofree char *archive = corral_policy_audit_archive_dir (vm_dir);
        g_autofree char *expected = g_build_filename (state, "corral", "audit", NULL);
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", state);
        g_autoptr (CorralPolicy) locked = parse_ok ("{\"audit\": {\"keepDays\": 30}}", NULL);
        g_autoptr (CorralPolicy) unlocked =
                parse_ok ("{\"audit\": {\"keepDays\": {\"value\": 30, \"locked\": false}}}", NULL);
        g_autoptr (GError) error = NULL;
        g_auto (GStrv) removed = NULL;
        g_autoptr (GDir) d = NULL;
        g_autofree char *kept = NULL, *log = NULL, *text = NULL;
        const char *entry;

        g_assert_cmpstr (archive, ==, expected);
        /* Not asked: the logs go with the VM folder. */
        write_logs (vm_dir);
        g_assert_true (corral_policy_audit_keep (unlocked, vm_dir, "task-1", &error));
        g_assert_no_error (error);
        g_assert_false (g_file_test (archive, G_FILE_TEST_EXISTS));

        /* Asked: both logs move out of the folder, whole. */
        g_assert_true (corral_policy_audit_keep (locked, vm_dir, "task-1", &error));
        g_assert_no_error (error);
        d = g_dir_open (archive, 0, &error);
        g_assert_no_error (error);
        entry = g_dir_read_name (d);
        g_assert_nonnull (entry);
        g_assert_true (g_str_has_prefix (entry, "task-1-"));
        kept = g_build_filename (archive, entry, NULL);
        g_assert_null (g_dir_read_name (d));
        log = g_build_filename (kept, "egress.jsonl", NULL);
        g_assert_true (g_file_get_contents (log, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "{\"host\":\"pypi.org\"}\n");
        g_clear_pointer (&log, g_free);
        log = g_build_filename (vm_dir, "audit.jsonl", NULL);
        g_assert_false (g_file_test (log, G_FILE_TEST_EXISTS));

        /* Younger than 30 days: kept; older: removed; without the rule nothing is removed. */
        age (kept, 29);
        g_assert_cmpuint (corral_policy_audit_prune (locked, archive, &removed), ==, 0);
        g_assert_true (g_file_test (kept, G_FILE_TEST_IS_DIR));
        g_clear_pointer (&removed, g_strfreev);
        age (kept, 31);
        g_assert_cmpuint (corral_policy_audit_prune (unlocked, archive, NULL), ==, 0);
        g_assert_true (g_file_test (kept, G_FILE_TEST_IS_DIR));
        g_assert_cmpuint (corral_policy_audit_prune (locked, archive, &removed), ==, 1);
        g_assert_cmpstr (removed[0], ==, kept);
        g_assert_false (g_file_test (kept, G_FILE_TEST_EXISTS));

        /* The policy could not be read: it might have asked, so they are kept. */
        write_logs (vm_dir);
        g_assert_true (corral_policy_audit_keep (NULL, vm_dir, "task-1", &error));
        g_assert_no_error (error);
        g_assert_false (g_file_test (log, G_FILE_TEST_EXISTS));
        g_assert_cmpint (system (cmd), ==, 0);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

        g_test_add_func ("/policy/plain-and-default", test_plain_and_default);
        g_test_add_func ("/policy/combine/bool", test_combine_bool);
        g_test_add_func ("/policy/combine/int", test_combine_int);
        g_test_add_func ("/policy/combine/enum", test_combine_enum);
        g_test_add_func ("/policy/combine/version", test_combine_version);
        g_test_add_func ("/policy/combine/string", test_combine_string);
        g_test_add_func ("/policy/combine/deny", test_combine_deny);
        g_test_add_func ("/policy/combine/allow", test_combine_allow);
        g_test_add_func ("/policy/combine/objects", test_combine_objects);
        g_test_add_func ("/policy/locked-beats-default", test_locked_beats_default);
        g_test_add_func ("/policy/drop-ins", test_drop_ins);
        g_test_add_func ("/policy/errors", test_errors);
        g_test_add_func ("/policy/error-limits", test_error_limits);
        g_test_add_func ("/policy/file-errors", test_file_errors);
        g_test_add_func ("/policy/digest", test_digest);
        g_test_add_func ("/policy/schema", test_schema);
        g_test_add_func ("/policy/shipped-example", test_shipped_example);
        g_test_add_func ("/policy/key-table", test_key_table);
        g_test_add_func ("/policy/max-mode", test_max_mode);
        g_test_add_func ("/policy/version", test_version);
        g_test_add_func ("/policy/to-json", test_to_json);
        g_test_add_func ("/policy/fs-paths-accepted", test_fs_paths_accepted);
        g_test_add_func ("/policy/audit-keep", test_audit_keep);

        return g_test_run ();
}
