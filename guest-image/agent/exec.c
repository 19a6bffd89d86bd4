/* exec.c — the exec.* methods: option validation, spawn, kill, list, attach, detach, resize.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

typedef struct {
        uint32_t channel;
        bool background;
        int64_t timeout_ms;
        int64_t ring;
} ExecOpts;

static bool
parse_rlimits (Agent *a, uint64_t id, const cJSON *params, SpawnParams *sp)
{
        static const char *const keys[4] = { "nproc", "fsize", "nofile", "cpu" };
        const cJSON *rl = NULL;

        for (int i = 0; i < 4; i++)
                sp->rlimit[i] = -1;
        if (proto_json_get_object (params, "rlimits", &rl) == -EINVAL) {
                agent_respond_error (a, id, "invalid-request", "rlimits must be an object", 0);
                return false;
        }
        for (int i = 0; rl && i < 4; i++)
                if (int_param (a, id, rl, keys[i], 0, (int64_t) PROTO_MAX_ID, &sp->rlimit[i]) < 0)
                        return false;
        return true;
}

static bool
parse_pty (Agent *a, uint64_t id, const cJSON *params, SpawnParams *sp)
{
        const cJSON *pty = NULL;
        int64_t rows = 24, cols = 80;
        int r = proto_json_get_object (params, "pty", &pty);

        if (r == -EINVAL) {
                agent_respond_error (a, id, "invalid-request", "pty must be an object", 0);
                return false;
        }
        sp->pty = r == 0;
        if (pty && (int_param (a, id, pty, "rows", 1, 0xFFFF, &rows) < 0 ||
                    int_param (a, id, pty, "cols", 1, 0xFFFF, &cols) < 0))
                return false;
        sp->rows = (unsigned short) rows;
        sp->cols = (unsigned short) cols;
        return true;
}

static bool
parse_opts (Agent *a, uint64_t id, const cJSON *params, SpawnParams *sp, ExecOpts *o)
{
        bool use_stdin = false;

        o->timeout_ms = 0;
        o->ring = AGENT_RING_DEFAULT;
        o->background = false;
        if (!channel_param (a, id, params, &o->channel) ||
            bool_param (a, id, params, "stdin", &use_stdin) < 0 ||
            bool_param (a, id, params, "background", &o->background) < 0 ||
            int_param (a, id, params, "timeout_ms", 0, AGENT_MAX_TIMEOUT_MS, &o->timeout_ms) < 0 ||
            int_param (a, id, params, "ring", 0, AGENT_RING_MAX, &o->ring) < 0 ||
            !parse_rlimits (a, id, params, sp) || !parse_pty (a, id, params, sp))
                return false;
        sp->use_stdin = use_stdin;
        /* Smaller rings are raised to the minimum that still holds a useful replay. */
        if (o->ring < AGENT_RING_MIN)
                o->ring = AGENT_RING_MIN;
        if (proto_json_get_string (params, "cwd", AGENT_PATH_MAX - 1, &sp->cwd) == -EINVAL ||
            (sp->cwd && sp->cwd[0] != '/')) {
                agent_respond_error (a, id, "invalid-request", "cwd must be an absolute path", 0);
                return false;
        }
        if (a->n_procs >= AGENT_MAX_PROCS) {
                agent_respond_error (a, id, "busy", "too many processes", 0);
                return false;
        }
        if (a->ring_reserved + (uint64_t) o->ring > AGENT_RING_BUDGET) {
                agent_respond_error (a, id, "busy", "output buffer memory exhausted", 0);
                return false;
        }
        return true;
}

/* "confine" (default true): the second wall (SECURITY.md A7, A8). Refuses to start a command
 * without it unless asked to, rather than run it with less than promised. */
static bool
setup_confinement (Agent *a, uint64_t id, const cJSON *params, const User *u, SpawnParams *sp)
{
        bool confine = true;
        char msg[256];
        int r;

        if (bool_param (a, id, params, "confine", &confine) < 0)
                return false;
        sp->confine = confine;
        sp->ruleset_fd = -1;
        if (!confine)
                return true;
        if (!a->confine.filter.filter) {
                snprintf (msg, sizeof msg,
                          "confinement: the seccomp filter is unavailable (%s); the command was "
                          "not started (run it unconfined only if you trust it)",
                          strerror (a->confine.seccomp_err));
                agent_respond_error (a, id, proto_errno_code (a->confine.seccomp_err), msg,
                                     a->confine.seccomp_err);
                return false;
        }
        sp->wall = &a->confine;
        r = confine_ruleset (&a->confine, u->home, &sp->ruleset_fd);
        if (r < 0) {
                snprintf (msg, sizeof msg,
                          "confinement: cannot build the Landlock ruleset: %s; the command was "
                          "not started",
                          strerror (-r));
                agent_respond_error (a, id, proto_errno_code (-r), msg, -r);
                return false;
        }
        return true;
}

static void
proc_link (Agent *a, Proc *p)
{
        p->next = a->procs;
        if (a->procs)
                a->procs->prev = p;
        a->procs = p;
        a->n_procs++;
}

static void
respond_spawn_error (Agent *a, uint64_t id, int err, const char *step)
{
        char msg[256];

        snprintf (msg, sizeof msg, "%s: %s", step, strerror (err));
        agent_respond_error (a, id, proto_errno_code (err), msg, err);
}

static void
start (Agent *a, uint64_t id, SpawnParams *sp, const ExecOpts *o, Proc *p)
{
        const char *step = "setup";
        int r = spawn_proc (a, p, sp, &step);

        if (r < 0) {
                respond_spawn_error (a, id, -r, step);
                proc_free (a, p);
                return;
        }
        p->background = o->background;
        ring_init (&p->ring, (size_t) o->ring);
        a->ring_reserved += (uint64_t) o->ring;
        proc_link (a, p);
        /* Cannot fail: the channel id was checked free and the count below the limit. */
        if (proc_attach (a, p, o->channel) < 0)
                agent_log ("proc %llu: cannot attach", (unsigned long long) p->id);
        proc_start_io (a, p);
        if (o->timeout_ms > 0)
                timer_start (a, &p->timeout, (uint64_t) o->timeout_ms);
        {
                cJSON *res = cJSON_CreateObject ();

                if (res) {
                        json_add_number (res, "proc", (double) p->id);
                        json_add_number (res, "pid", p->pid);
                }
                agent_respond (a, id, res);
        }
        agent_debug ("proc %llu: pid %d", (unsigned long long) p->id, (int) p->pid);
        proc_update (a, p);
}

void
method_exec_start (Agent *a, uint64_t id, const cJSON *params)
{
        SpawnParams sp = { 0 };
        ExecOpts o;
        User u = { 0 };
        char *shell = NULL;
        char **argv = NULL, **envp = NULL;
        Proc *p;
        struct stat st;

        if (!parse_opts (a, id, params, &sp, &o))
                return;
        argv = build_argv (a, id, params, &shell);
        if (!argv)
                return;
        if (!resolve_user (a, id, params, &u))
                goto out;
        envp = build_env (a, id, params, &u, sp.pty);
        if (!envp)
                goto out;
        if (!sp.cwd) {
                sp.cwd = stat (u.home, &st) == 0 && S_ISDIR (st.st_mode) ? u.home : "/";
                sp.cwd_fallback = true;
        }
        sp.argv = argv;
        sp.envp = envp;
        sp.uid = u.uid;
        sp.gid = u.gid;
        sp.change_user = a->is_root;
        sp.nofile_soft = a->orig_nofile_soft;
        sp.nofile_hard = a->orig_nofile_hard;
        if (!setup_confinement (a, id, params, &u, &sp))
                goto out;
        if (sp.change_user && !(sp.groups = user_groups (&u, &sp.n_groups))) {
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                goto out;
        }
        p = proc_new (a);
        if (!p) {
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                goto out;
        }
        if (shell) {
                p->shell = shell;
                shell = NULL;
        } else {
                p->argv = argv;
                argv = NULL;
        }
        start (a, id, &sp, &o, p);
out:
        free (sp.groups);
        strv_free (argv);
        strv_free (envp);
        free (shell);
        user_clear (&u);
}

void
method_exec_kill (Agent *a, uint64_t id, const cJSON *params)
{
        Proc *p = proc_param (a, id, params);
        int64_t sig = SIGTERM;

        if (!p || int_param (a, id, params, "signal", 1, SIGRTMAX, &sig) < 0)
                return;
        proc_kill (p, (int) sig);
        agent_respond (a, id, NULL);
}

void
method_exec_list (Agent *a, uint64_t id, const cJSON *params)
{
        cJSON *res = cJSON_CreateObject ();
        cJSON *arr = res ? cJSON_AddArrayToObject (res, "procs") : NULL;

        for (Proc *p = a->procs; arr && p; p = p->next)
                cJSON_AddItemToArray (arr, proc_describe (p));
        agent_respond (a, id, res);
}

void
method_exec_attach (Agent *a, uint64_t id, const cJSON *params)
{
        Proc *p = proc_param (a, id, params);
        uint32_t channel;
        int r;

        if (!p || !channel_param (a, id, params, &channel))
                return;
        r = proc_attach (a, p, channel);
        if (r < 0) {
                agent_respond_errno (a, id, -r, NULL);
                return;
        }
        agent_respond (a, id, NULL);
        proc_update (a, p);
}

void
method_exec_detach (Agent *a, uint64_t id, const cJSON *params)
{
        Proc *p = proc_param (a, id, params);

        if (!p)
                return;
        proc_detach (a, p);
        agent_respond (a, id, NULL);
        proc_update (a, p);
}

void
method_exec_resize (Agent *a, uint64_t id, const cJSON *params)
{
        Proc *p = proc_param (a, id, params);
        int64_t rows, cols;
        struct winsize ws = { 0 };

        if (!p)
                return;
        if (proto_json_get_int (params, "rows", 1, 0xFFFF, &rows) < 0 ||
            proto_json_get_int (params, "cols", 1, 0xFFFF, &cols) < 0) {
                agent_respond_error (a, id, "invalid-request", "rows and cols must be 1..65535", 0);
                return;
        }
        if (!p->pty) {
                agent_respond_error (a, id, "invalid-request", "not a PTY process", 0);
                return;
        }
        if (p->out[0].fd < 0) {
                agent_respond_error (a, id, "not-found", "the terminal is closed", 0);
                return;
        }
        ws.ws_row = (unsigned short) rows;
        ws.ws_col = (unsigned short) cols;
        if (ioctl (p->out[0].fd, TIOCSWINSZ, &ws) < 0) {
                agent_respond_errno (a, id, errno, NULL);
                return;
        }
        agent_respond (a, id, NULL);
}
