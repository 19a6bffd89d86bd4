/* corral-demo-source.c — a scripted chat source (tests, screenshots).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-demo-source.h"

struct _CorralDemoSource {
        GObject parent_instance;

        guint delay_ms;
        guint step;
        guint timeout_id;
        gboolean busy;
        gboolean waiting; /* for an approval */
        CorralChatAnswer last_answer;
        char **words; /* text being streamed */
        guint word;
        GPtrArray *answers;
        char *folder; /* shown as the shared folder on this computer */
        gboolean fail_next; /* the next message ends on a passing failure */
        gboolean can_retry;
        guint retries;
};

static void corral_demo_source_iface_init (CorralChatSourceInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (CorralDemoSource,
                               corral_demo_source,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (CORRAL_TYPE_CHAT_SOURCE,
                                                      corral_demo_source_iface_init))

static void schedule (CorralDemoSource *self);

static void
stream_text (CorralDemoSource *self, const char *text)
{
        g_strfreev (self->words);
        self->words = g_strsplit (text, " ", -1);
        self->word = 0;
}

static CorralChatTool *
make_tool (const char *id, const char *tool, const char *title, const char *command)
{
        CorralChatTool *t = corral_chat_tool_new (id, tool, title);

        t->command = g_strdup (command);
        return t;
}

static void
on_answer (CorralChatAnswer answer, gpointer user_data)
{
        CorralDemoSource *self = user_data;
        static const char *const names[] = { "deny", "allow-once", "allow-task", "allow-always" };

        g_ptr_array_add (
                self->answers,
                g_strdup_printf ("%s:%s", self->step == 6 ? "delete" : "network", names[answer]));
        self->last_answer = answer;
        self->waiting = FALSE;
        self->step++;
        schedule (self);
}

static void
ask (CorralDemoSource *self, CorralChatApprovalKind kind, const char *target, const char *reason)
{
        g_autoptr (CorralChatApproval) a = NULL;

        self->waiting = TRUE;
        a = corral_chat_approval_new (kind, target, reason, on_answer, g_object_ref (self),
                                      g_object_unref);
        if (kind == CORRAL_CHAT_APPROVAL_DELETE) {
                CorralChatApprovalFile file = {
                        .share_name = (char *) "Documents",
                        .share_folder = self->folder,
                        .mode = FS_MODE_RW_NODELETE,
                        .path = (char *) "report-old.docx",
                        .type = G_FILE_TYPE_REGULAR,
                };
                corral_chat_approval_set_file (a, &file);
        }
        corral_chat_source_emit_approval_requested (CORRAL_CHAT_SOURCE (self), a);
}

static void
finish_delete (CorralDemoSource *self)
{
        g_autoptr (CorralChatTool) t = make_tool (
                "t3", "request_approval", "delete /workspace/Documents/report-old.docx", NULL);

        t->finished = TRUE;
        t->outcome =
                g_strdup (self->last_answer == CORRAL_CHAT_ANSWER_ALLOW_ONCE ? "done" : "denied");
        if (self->last_answer == CORRAL_CHAT_ANSWER_ALLOW_ONCE) {
                t->output = g_strdup ("Deleted /workspace/Documents/report-old.docx "
                                      "(a copy was kept).");
                g_ptr_array_add (t->files_changed,
                                 g_strdup ("/workspace/Documents/report-old.docx"));
        } else {
                t->is_error = TRUE;
                t->output = g_strdup ("The person said no: report-old.docx was not deleted.");
        }
        corral_chat_source_emit_tool_finished (CORRAL_CHAT_SOURCE (self), t);
}

/* One step of the script; FALSE while waiting for the person. */
static gboolean
run_step (CorralDemoSource *self)
{
        CorralChatSource *src = CORRAL_CHAT_SOURCE (self);
        g_autoptr (CorralChatTool) t = NULL;

        switch (self->step) {
        case 0:
                stream_text (self, "I'll look at what is in the folder first.");
                return TRUE;
        case 1:
                t = make_tool ("t1", "shell", "ls -l /workspace/Documents",
                               "ls -l /workspace/Documents");
                t->summary = g_strdup ("List what is in Documents");
                corral_chat_source_emit_tool_started (src, t);
                return TRUE;
        case 2:
                t = make_tool ("t1", "shell", "ls -l /workspace/Documents",
                               "ls -l /workspace/Documents");
                t->summary = g_strdup ("List what is in Documents");
                t->finished = TRUE;
                t->exit_code = 0;
                t->output = g_strdup ("-rw-r--r-- 1 corral corral 48213 Mar  3 report.docx\n"
                                      "-rw-r--r-- 1 corral corral 47120 Feb 11 report-old.docx\n"
                                      "-rw-r--r-- 1 corral corral  1204 Mar  3 notes.txt");
                g_ptr_array_add (t->files_read, g_strdup ("/workspace/Documents"));
                corral_chat_source_emit_tool_finished (src, t);
                return TRUE;
        case 3:
                stream_text (self, "\n\nThere are two versions of the report. I'll write a "
                                   "short summary to summary.md.");
                return TRUE;
        case 4:
                t = make_tool ("t2", "create", "/workspace/Documents/summary.md", NULL);
                t->finished = TRUE;
                t->output = g_strdup ("Created /workspace/Documents/summary.md (14 lines).");
                g_ptr_array_add (t->files_read, g_strdup ("/workspace/Documents/report.docx"));
                g_ptr_array_add (t->files_changed, g_strdup ("/workspace/Documents/summary.md"));
                corral_chat_source_emit_tool_started (src, t);
                corral_chat_source_emit_tool_finished (src, t);
                return TRUE;
        case 5:
                stream_text (self, "\n\nreport-old.docx is an older copy of report.docx; I'd "
                                   "like to remove it.");
                return TRUE;
        case 6:
                /* As in the assistant loop: the call runs while the person is asked. */
                t = make_tool ("t3", "request_approval",
                               "delete /workspace/Documents/report-old.docx", NULL);
                corral_chat_source_emit_tool_started (src, t);
                ask (self, CORRAL_CHAT_APPROVAL_DELETE, "/workspace/Documents/report-old.docx",
                     "It is an older copy of report.docx.");
                return FALSE;
        case 7:
                finish_delete (self);
                return TRUE;
        case 8:
                t = make_tool ("t4", "shell", "pip install python-docx", "pip install python-docx");
                t->finished = TRUE;
                t->exit_code = 1;
                t->is_error = TRUE;
                t->output = g_strdup ("ERROR: Could not install packages: blocked by sandbox.");
                g_ptr_array_add (t->network, g_strdup ("CONNECT pypi.org:443 denied "
                                                       "(default-deny)"));
                g_ptr_array_add (t->blocked,
                                 g_strdup ("blocked by sandbox: pypi.org is not in the allowed "
                                           "hosts; ask the user to allow it in Settings → "
                                           "Network"));
                corral_chat_source_emit_tool_started (src, t);
                corral_chat_source_emit_tool_finished (src, t);
                return TRUE;
        case 9:
                ask (self, CORRAL_CHAT_APPROVAL_NETWORK, "pypi.org",
                     "To install python-docx, which reads Word files.");
                return FALSE;
        case 10:
                stream_text (self, self->last_answer == CORRAL_CHAT_ANSWER_DENY
                                           ? "\n\nUnderstood, I will not use the internet. The "
                                             "summary is in summary.md."
                                           : "\n\nThanks. The summary is in summary.md.");
                return TRUE;
        default:
                self->busy = FALSE;
                corral_chat_source_emit_task_finished (src, NULL);
                return FALSE;
        }
}

static gboolean
on_tick (gpointer user_data)
{
        CorralDemoSource *self = user_data;

        self->timeout_id = 0;
        if (self->words && self->words[self->word]) {
                g_autofree char *chunk =
                        g_strconcat (self->word ? " " : "", self->words[self->word], NULL);
                self->word++;
                corral_chat_source_emit_text_delta (CORRAL_CHAT_SOURCE (self), chunk);
                schedule (self);
                return G_SOURCE_REMOVE;
        }
        g_clear_pointer (&self->words, g_strfreev);
        if (run_step (self)) {
                self->step++;
                schedule (self);
        }
        return G_SOURCE_REMOVE;
}

static void
schedule (CorralDemoSource *self)
{
        if (self->timeout_id || !self->busy || self->waiting)
                return;
        self->timeout_id = g_timeout_add (self->delay_ms, on_tick, self);
}

static void
demo_send (CorralChatSource *source, const char *text)
{
        CorralDemoSource *self = CORRAL_DEMO_SOURCE (source);

        if (self->busy)
                return;
        self->can_retry = FALSE;
        if (self->fail_next) {
                /* As the assistant source says a provider it could not reach. */
                self->fail_next = FALSE;
                self->can_retry = TRUE;
                corral_chat_source_emit_task_finished (
                        source, "Could not reach the model's provider: the network is down.");
                return;
        }
        self->busy = TRUE;
        self->step = 0;
        schedule (self);
}

static gboolean
demo_can_retry (CorralChatSource *source)
{
        return CORRAL_DEMO_SOURCE (source)->can_retry;
}

static void
demo_retry (CorralChatSource *source)
{
        CorralDemoSource *self = CORRAL_DEMO_SOURCE (source);

        self->can_retry = FALSE;
        self->retries++;
        corral_chat_source_emit_text_delta (source, "Back again: the provider answers.");
        corral_chat_source_emit_task_finished (source, NULL);
}

static void
demo_stop (CorralChatSource *source)
{
        CorralDemoSource *self = CORRAL_DEMO_SOURCE (source);

        if (!self->busy)
                return;
        g_clear_handle_id (&self->timeout_id, g_source_remove);
        g_clear_pointer (&self->words, g_strfreev);
        self->busy = FALSE;
        self->waiting = FALSE;
        corral_chat_source_emit_task_finished (source, "Stopped.");
}

static void
corral_demo_source_iface_init (CorralChatSourceInterface *iface)
{
        iface->send = demo_send;
        iface->stop = demo_stop;
        iface->can_retry = demo_can_retry;
        iface->retry = demo_retry;
}

static void
corral_demo_source_finalize (GObject *object)
{
        CorralDemoSource *self = CORRAL_DEMO_SOURCE (object);

        g_clear_handle_id (&self->timeout_id, g_source_remove);
        g_clear_pointer (&self->words, g_strfreev);
        g_clear_pointer (&self->answers, g_ptr_array_unref);
        g_clear_pointer (&self->folder, g_free);
        G_OBJECT_CLASS (corral_demo_source_parent_class)->finalize (object);
}

static void
corral_demo_source_class_init (CorralDemoSourceClass *klass)
{
        G_OBJECT_CLASS (klass)->finalize = corral_demo_source_finalize;
}

static void
corral_demo_source_init (CorralDemoSource *self)
{
        self->delay_ms = 40;
        self->answers = g_ptr_array_new_with_free_func (g_free);
        self->folder = g_strdup ("/home/user/Documents");
}

CorralDemoSource *
corral_demo_source_new (void)
{
        return g_object_new (CORRAL_TYPE_DEMO_SOURCE, NULL);
}

void
corral_demo_source_set_step_delay (CorralDemoSource *self, guint delay_ms)
{
        g_return_if_fail (CORRAL_IS_DEMO_SOURCE (self));
        self->delay_ms = delay_ms;
}

void
corral_demo_source_set_folder (CorralDemoSource *self, const char *folder)
{
        g_return_if_fail (CORRAL_IS_DEMO_SOURCE (self) && folder != NULL);
        g_free (self->folder);
        self->folder = g_strdup (folder);
}

const GPtrArray *
corral_demo_source_get_answers (CorralDemoSource *self)
{
        g_return_val_if_fail (CORRAL_IS_DEMO_SOURCE (self), NULL);
        return self->answers;
}

gboolean
corral_demo_source_is_busy (CorralDemoSource *self)
{
        g_return_val_if_fail (CORRAL_IS_DEMO_SOURCE (self), FALSE);
        return self->busy;
}

void
corral_demo_source_fail_next (CorralDemoSource *self)
{
        g_return_if_fail (CORRAL_IS_DEMO_SOURCE (self));
        self->fail_next = TRUE;
}

guint
corral_demo_source_get_retries (CorralDemoSource *self)
{
        g_return_val_if_fail (CORRAL_IS_DEMO_SOURCE (self), 0);
        return self->retries;
}
