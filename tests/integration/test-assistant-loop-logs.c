/* test-assistant-loop-logs.c — the assistant loop reads the VM's audit logs across their rotation
 * (corral-audit-log.h): a refusal written just before, during or after a rotation is still
 * explained for the call that caused it, records from before the call are still not blamed on
 * it, and a folded line ("count": N) is summed up but not explained twice.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-assistant-loop-util.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

#include "assistant-sandbox-log.h"
#include "fs-audit.h"

static char *
make_vm_dir (Fix *fix)
{
        char *vm_dir = fix_path (fix, "vm");
        g_autofree char *policy = g_build_filename (vm_dir, "egress-policy.json", NULL);

        g_assert_cmpint (g_mkdir (vm_dir, 0700), ==, 0);
        g_assert_true (g_file_set_contents (policy, "{\"preset\": \"none\"}", -1, NULL));
        corral_assistant_session_set_vm (fix->session, "work", vm_dir);
        return vm_dir;
}

static char *
refusal (const char *path, guint count)
{
        g_autofree char *extra = count ? g_strdup_printf (",\"count\":%u", count) : g_strdup ("");

        return g_strdup_printf ("{\"time\":\"t\",\"source\":\"files\",\"share\":\"proj\","
                                "\"op\":\"unlink\",\"path\":\"%s\",\"result\":\"refused\","
                                "\"rule\":\"no-delete\",\"errno\":\"EPERM\",\"message\":"
                                "\"Blocked by the sandbox: no delete.\"%s}",
                                path, extra);
}

static guint
occurrences (const char *haystack, const char *needle)
{
        guint n = 0;

        for (const char *p = strstr (haystack, needle); p; p = strstr (p + 1, needle))
                n++;
        return n;
}

/* The command writes what the file server and the egress daemon would, rotating both logs
 * (twice for the file log) while it runs. */
static void
test_explained_after_rotation (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autofree char *vm_dir = make_vm_dir (fix);
        g_autofree char *audit = g_build_filename (vm_dir, "audit.jsonl", NULL);
        g_autofree char *egress = g_build_filename (vm_dir, "egress.jsonl", NULL);
        g_autofree char *old = refusal ("before.txt", 0), *a = refusal ("a.txt", 0);
        g_autofree char *b = refusal ("b.txt", 0), *c = refusal ("c.txt", 0);
        g_autofree char *c_folded = refusal ("c.txt", 4999);
        g_autofree char *before = g_strconcat (old, "\n", NULL);
        g_autofree char *cmd = NULL, *in = NULL;
        g_autoptr (cJSON) input = cJSON_CreateObject ();
        CorralAssistantToolCard *card;
        const char *out;
        char *json;

        /* Records from before the call are not blamed on it, rotated or not. */
        g_assert_true (g_file_set_contents (audit, before, -1, NULL));
        g_assert_true (g_file_set_contents (
                egress, "{\"host\":\"old.example\",\"port\":443,\"decision\":\"denied\"}\n", -1,
                NULL));
        cmd = g_strdup_printf (
                "cd '%s' && printf '%%s\\n' '%s' >> audit.jsonl && "
                "mv audit.jsonl audit.jsonl.1 && printf '%%s\\n' '%s' >> audit.jsonl && "
                "mv audit.jsonl.1 audit.jsonl.2 && mv audit.jsonl audit.jsonl.1 && "
                "printf '%%s\\n' '%s' '%s' >> audit.jsonl && "
                "mv egress.jsonl egress.jsonl.1 && "
                "printf '%%s\\n' '{\"method\":\"CONNECT\",\"host\":\"example.org\",\"port\":443,"
                "\"decision\":\"denied\",\"rule\":\"default-deny\",\"reason\":\"not allowed\"}' "
                ">> egress.jsonl; echo done",
                vm_dir, a, b, c, c_folded);
        cJSON_AddStringToObject (input, "command", cmd);
        json = cJSON_PrintUnformatted (input);
        in = g_strdup (json);
        cJSON_free (json);
        fix_push (fix, NULL, "shell", in, "tool");
        fix_push (fix, "ok", NULL, NULL, "end");
        fix_run (fix, "tidy", NULL);
        g_assert_no_error (fix->error);
        out = fix_output (fix, 0);
        g_test_message ("%s", out);
        g_assert_nonnull (strstr (out, "unlink of /workspace/proj/a.txt was refused"));
        g_assert_nonnull (strstr (out, "unlink of /workspace/proj/b.txt was refused"));
        g_assert_nonnull (strstr (out, "unlink of /workspace/proj/c.txt was refused"));
        g_assert_nonnull (strstr (out, "connection to example.org:443 was refused"));
        g_assert_null (strstr (out, "before.txt"));
        g_assert_null (strstr (out, "old.example"));
        /* The folded line repeats c.txt's refusal: counted, not explained again. */
        g_assert_cmpuint (occurrences (out, "/workspace/proj/c.txt"), ==, 1);
        card = fix_card (fix, 0);
        g_assert_cmpuint (card->blocked->len, ==, 4);
        /* Refused attempts are not changes. */
        g_assert_cmpuint (card->files_changed->len, ==, 0);
}

/* The real writer rotating under the reader: every record written since the mark is read in
 * order across two rotations; when the log rotated past its oldest kept file, the newest
 * records are read and the rest are gone, without an error. */
static void
test_read_across_writer_rotation (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corral-logs-XXXXXX", NULL);
        g_autofree char *path = g_build_filename (dir, "audit.jsonl", NULL);
        g_autoptr (GError) error = NULL;
        g_autoptr (FsAudit) log = fs_audit_open (path, &error);
        g_autoptr (GPtrArray) first = NULL, second = NULL;
        AssistantLogMark mark;
        guint64 skipped = 0;

        g_assert_no_error (error);
        fs_audit_set_limits (log, 4096, 3);
        assistant_sandbox_mark (dir, &mark);
        for (guint i = 0; i < 30; i++) {
                g_autofree char *p = g_strdup_printf ("f%u", i);
                FsAuditRecord rec = { .share = "s",
                                      .op = "mkdir",
                                      .path = p,
                                      .result = "refused",
                                      .rule = "read-only",
                                      .errnum = EROFS,
                                      .message = "Blocked by the sandbox: read-only.",
                                      .size = -1 };
                fs_audit_write (log, &rec);
        }
        first = assistant_sandbox_read_since (dir, &mark, &skipped);
        g_assert_cmpuint (skipped, ==, 0);
        g_assert_cmpuint (first->len, ==, 30);
        for (guint i = 0; i < 30; i++) {
                g_autofree char *p = g_strdup_printf ("f%u", i);
                g_assert_cmpstr (
                        cJSON_GetStringValue (cJSON_GetObjectItem (first->pdata[i], "path")), ==,
                        p);
        }
        for (guint i = 0; i < 500; i++) {
                g_autofree char *p = g_strdup_printf ("g%u", i);
                FsAuditRecord rec = {
                        .share = "s", .op = "create", .path = p, .result = "ok", .size = -1
                };
                fs_audit_write (log, &rec);
        }
        second = assistant_sandbox_read_since (dir, &mark, &skipped);
        g_assert_cmpuint (second->len, >, 0);
        g_assert_cmpuint (second->len, <, 500);
        g_assert_cmpstr (
                cJSON_GetStringValue (cJSON_GetObjectItem (second->pdata[second->len - 1], "path")),
                ==, "g499");
        g_clear_pointer (&log, fs_audit_close);
        for (guint k = 0; k <= 3; k++) {
                g_autofree char *f = k ? g_strdup_printf ("%s.%u", path, k) : g_strdup (path);
                g_unlink (f);
        }
        g_rmdir (dir);
}

int
main (int argc, char **argv)
{
        fix_init_environment ();
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/assistant-loop/logs/refusal-explained-after-rotation",
                         test_explained_after_rotation);
        g_test_add_func ("/assistant-loop/logs/read-across-writer-rotation",
                         test_read_across_writer_rotation);
        return g_test_run ();
}
