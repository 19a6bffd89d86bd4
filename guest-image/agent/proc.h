/* proc.h — processes started by exec.start, and their output ring buffers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "agent.h"

/* A ring of output records [stream:2 | length:30 big-endian][bytes], oldest dropped first, so
 * that a replay keeps stdout and stderr interleaved as they were read. */
typedef struct {
        uint8_t *buf; /* allocated on first use */
        size_t cap;
        uint64_t head; /* absolute offset of the oldest record */
        uint64_t tail; /* absolute offset past the newest record */
} Ring;

typedef struct {
        uint64_t rec; /* absolute offset of the current record */
        size_t done; /* bytes of its payload already consumed */
} RingCursor;

void ring_init (Ring *r, size_t cap);
void ring_clear (Ring *r);
void ring_append (Ring *r, unsigned stream, const uint8_t *data, size_t n);
/* The next contiguous bytes at the cursor; false when the cursor is at the end. Moves a cursor
 * that points at dropped records to the oldest record. */
bool ring_peek (const Ring *r,
                RingCursor *cur,
                unsigned *ret_stream,
                const uint8_t **ret_data,
                size_t *ret_len);
void ring_advance (RingCursor *cur, size_t n);
void ring_cursor_head (const Ring *r, RingCursor *cur);
void ring_cursor_tail (const Ring *r, RingCursor *cur);

typedef struct InChunk InChunk;

/* Distinct refused system calls kept per process, for exec.exit. */
#define PROC_MAX_REFUSED 8

/* Pending input for the child, bytes [off, len) still to write. */
struct InChunk {
        InChunk *next;
        size_t len, off;
        uint8_t data[];
};

struct Proc {
        Proc *prev, *next;
        uint64_t id;
        pid_t pid;
        char **argv; /* NULL-terminated, or NULL when started with shell */
        char *shell;
        bool background;
        bool pty;
        bool reaped;
        int wstatus;
        bool timed_out;
        bool orphan; /* a foreground process of an ended session: forgotten once finished */

        /* out[0]: stdout or the PTY master (which also takes input); out[1]: stderr. */
        Source out[2];
        bool out_done[2]; /* end of stream read (or no such stream) */
        bool eof_sent[2]; /* to the current attachment */
        Source in; /* stdin pipe; unused for a PTY */
        bool has_input; /* a stdin pipe or a PTY that is still open */
        InChunk *in_head, *in_tail;
        bool in_eof; /* host sent EOF: close after the pending bytes */

        Ring ring;
        Channel *chan; /* current attachment */
        RingCursor cur;

        Timer timeout;
        Waiter *log_waiters;

        /* The seccomp listener of a confined command (confine.c): calls its tree was refused. */
        Source notify;
        char refused[PROC_MAX_REFUSED][32];
        unsigned n_refused;
};

/* proc.c */
Proc *proc_new (Agent *a);
void proc_free (Agent *a, Proc *p);
void proc_start_io (Agent *a, Proc *p);
void proc_update (Agent *a, Proc *p);
bool proc_finished (const Proc *p);
int proc_attach (Agent *a, Proc *p, uint32_t channel);
void proc_detach (Agent *a, Proc *p);
void proc_kill (Proc *p, int sig);
cJSON *proc_describe (const Proc *p);

/* Shared between proc.c and proc-attach.c. */
void proc_input_drop (Proc *p);
void proc_write_input (Agent *a, Proc *p, int fd);
void proc_set_interest (Agent *a, Proc *p);
void proc_add_status (cJSON *obj, const Proc *p);
void proc_on_timeout (Agent *a, Timer *t);

/* exec-env.c: each function answers the request and returns false / NULL on error. */
typedef struct {
        char *name;
        char *home;
        uid_t uid;
        gid_t gid;
} User;

void user_clear (User *u);
bool resolve_user (Agent *a, uint64_t id, const cJSON *params, User *ret);
/* The user's supplementary groups (at least the primary group); NULL on out-of-memory. */
gid_t *user_groups (const User *u, int *ret_n);
void strv_free (char **v);
char **build_env (Agent *a, uint64_t id, const cJSON *params, const User *u, bool pty);
/* argv from "argv" or "shell" (then *ret_shell is a copy of it). */
char **build_argv (Agent *a, uint64_t id, const cJSON *params, char **ret_shell);

/* confine.c */
typedef struct ConfineListener ConfineListener;
struct ConfineListener {
        Source src;
        ConfineListener *next;
};

void confine_init (Confine *c);
void confine_clear (Confine *c);
/* The Landlock ruleset for a command whose home is home (kept for the next one) in *ret_fd, -1
 * when the kernel has none. 0, or a negative errno when it cannot be built. */
int confine_ruleset (Confine *c, const char *home, int *ret_fd);
/* In the calling thread: no_new_privs, Landlock, seccomp. -1 with errno set. *ret_listener:
 * the notifying filter's listener fd, or -1 when the plain filter went in. */
int confine_apply_self (const Confine *c, int ruleset_fd, int *ret_listener);
/* In the spawned child: the same, the listener sent to the agent (confine_take_listener). */
int confine_apply_child (const Confine *c, int ruleset_fd, bool *ret_sent);
/* Watches a spawner's listener (owned by c->listeners until no process uses its filter):
 * refused calls are counted for the command whose tree made them. Takes fd. */
void confine_watch_listener (Agent *a, int fd);
/* In the agent after a spawn whose child sent a listener: watches it for p (or closes it when
 * p is NULL, the spawn having failed). */
void confine_take_listener (Agent *a, Proc *p);
/* Adds "refused": [names] when p was refused calls. */
void confine_add_refused (cJSON *obj, const Proc *p);
/* Adds "confinement" {"seccomp": text, "landlock": text} to an info result. */
void confine_describe (const Confine *c, cJSON *res);

/* spawner.c: a thread of the agent that confines itself once (confine_apply_self) and clones
 * the confined commands, which inherit its filter and ruleset for nothing. */
typedef struct Spawner Spawner;
/* clone (fn, stack, flags, arg) in the spawner confined with ruleset_fd (-1: no Landlock),
 * started or replaced first when the ruleset is new; *ret_pid: the child's pid or a negative
 * errno from clone. false when no spawner can run: the caller confines the child itself. */
bool spawner_clone (Agent *a,
                    int ruleset_fd,
                    int (*fn) (void *),
                    void *stack,
                    int flags,
                    void *arg,
                    pid_t *ret_pid);
/* Stops the thread (commands it started run on); NULL is ignored. */
void spawner_free (Spawner *s);

/* spawn.c */
typedef struct {
        char **argv; /* (transfer none) */
        char **envp; /* (transfer none) */
        const char *cwd;
        bool cwd_fallback; /* chdir("/") if cwd fails (cwd was the default home) */
        uid_t uid;
        gid_t gid;
        gid_t *groups;
        int n_groups;
        bool change_user;
        bool use_stdin;
        bool pty;
        unsigned short rows, cols;
        int64_t rlimit[4]; /* nproc, fsize, nofile, cpu; -1 when unset */
        uint64_t nofile_soft, nofile_hard; /* the agent's original limit, restored in the child */
        bool confine; /* install wall's filter and ruleset_fd (-1: no Landlock) before execve */
        const Confine *wall;
        int ruleset_fd;
} SpawnParams;

/* Records which signals children must set back to the default; called once the agent's own
 * dispositions are in place (the first spawn would otherwise pay for it). */
void spawn_prepare (void);
/* Fills p->pid and its fds. Negative errno, from the agent or the child's execve. */
int spawn_proc (Agent *a, Proc *p, const SpawnParams *sp, const char **ret_step);
