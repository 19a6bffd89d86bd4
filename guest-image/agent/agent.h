/* agent.h — internal interfaces of corral-agent, the guest side of PROTOCOL.md.
 *
 * One single-threaded epoll loop owns everything. Syscall-level helpers return a negative errno;
 * request handlers answer the host themselves (agent_respond*) and never fail otherwise.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "corral-outq.h"
#include "proto.h"

#include <linux/filter.h>

/* Limits (PROTOCOL.md "Limits", plus the agent's own). */
#define AGENT_MAX_PROCS 1024
#define AGENT_MAX_CHANNELS 4096
#define AGENT_MAX_WATCHES 256
#define AGENT_MAX_WAITERS 256
#define AGENT_MAX_ARGV 4096
#define AGENT_MAX_ENV 4096
/* The network proxy's variables for every command (keychain-bridge/guest/netsession.h). */
#define AGENT_NET_ENV "/run/corral/net.env"
#define AGENT_NET_ENV_MAX_BYTES (64 * 1024)
#define AGENT_NET_ENV_MAX_ENTRIES 128
#define AGENT_RING_DEFAULT (64u * 1024u)
#define AGENT_RING_MIN 4096u
#define AGENT_RING_MAX (16u * 1024u * 1024u)
#define AGENT_RING_BUDGET (256ull * 1024u * 1024u) /* all rings together */
#define AGENT_MAX_LIST 10000
#define AGENT_WATCH_BYTES (16u * 1024u * 1024u) /* paths of all watched directories */
#define AGENT_READ_CHUNK (128u * 1024u)
#define AGENT_PATH_MAX 4096
#define AGENT_MAX_TIMEOUT_MS (7ll * 24 * 3600 * 1000)
/* The outgoing queue stops producers above HIGH and wakes them below LOW. */
#define AGENT_OUTQ_HIGH (1024u * 1024u)
#define AGENT_OUTQ_LOW (256u * 1024u)

typedef struct Agent Agent;

/* Logging: always stderr, never the protocol stream. */
extern bool agent_verbose;
void agent_log (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
void agent_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* Event sources ------------------------------------------------------------------------------ */

typedef struct Source Source;
typedef void (*SourceFunc) (Agent *a, Source *s, uint32_t events);

struct Source {
        int fd; /* -1 when not registered */
        uint32_t events; /* current epoll interest */
        SourceFunc func;
        void *data;
        bool parked; /* removed from epoll until interest is set again */
};

void source_init (Source *s, SourceFunc func, void *data);
int source_add (Agent *a, Source *s, int fd, uint32_t events);
/* Setting any interest re-registers a parked source. */
void source_set_events (Agent *a, Source *s, uint32_t events);
/* A hang-up cannot be masked in epoll: a source that must not be read yet leaves epoll. */
void source_park (Agent *a, Source *s);
/* Unregisters and closes the fd. */
void source_close (Agent *a, Source *s);

typedef struct Timer Timer;
typedef void (*TimerFunc) (Agent *a, Timer *t);

struct Timer {
        uint64_t deadline_ms; /* CLOCK_MONOTONIC */
        TimerFunc func;
        void *data;
        bool armed;
        Timer *prev, *next;
};

uint64_t agent_now_ms (void);
void timer_init (Timer *t, TimerFunc func, void *data);
void timer_start (Agent *a, Timer *t, uint64_t delay_ms);
void timer_stop (Agent *a, Timer *t);

/* Transport / session ------------------------------------------------------------------------- */

typedef enum {
        TRANSPORT_FD,
        TRANSPORT_STDIO,
        TRANSPORT_UNIX,
        TRANSPORT_VSOCK,
        TRANSPORT_SERIAL,
} TransportKind;

typedef struct Channel Channel;
typedef struct Proc Proc;
typedef struct Watch Watch;
typedef struct Waiter Waiter;

/* confine.c: the seccomp filter and Landlock ruleset commands run under (SECURITY.md A7). */
typedef struct {
        struct sock_fprog filter; /* .filter NULL: could not be built (seccomp_err) */
        /* The same table, refused calls reported to the agent (SECCOMP_RET_USER_NOTIF), which
         * answers with the errno and tells the host which calls a command was refused. NULL
         * when the kernel or libseccomp cannot; then the plain filter is used. */
        struct sock_fprog notify_filter;
        int notify_sock[2]; /* the child sends its listener fd over [1]; the agent reads [0] */
        void *notif_req, *notif_resp; /* sized as the running kernel says */
        size_t notif_req_size, notif_resp_size;
        int seccomp_err;
        int landlock_abi; /* 0: the kernel has none (landlock_err) */
        int landlock_err;
        int ruleset_fd; /* built for ruleset_home, on first use */
        char *ruleset_home;
        uint64_t ruleset_places; /* what the places were when it was built (confine.c) */
        uint64_t ruleset_gen; /* counts the builds: a spawner confined with an older one is old */
        struct Spawner *spawner; /* spawner.c; NULL until the first confined command */
        struct ConfineListener *listeners; /* the spawners' seccomp listeners (confine.c) */
} Confine;

struct Agent {
        int epfd;
        bool quit;
        int exit_code;

        /* options */
        TransportKind transport;
        const char *address; /* path or port text */
        int opt_fd;
        uint32_t window;
        const char *default_user; /* NULL: "corral", falling back to "nobody" */
        const char *net_env; /* NULL: AGENT_NET_ENV */
        bool allow_poweroff; /* --allow-poweroff: PID 1 is the VM's init, system.poweroff works */
        bool is_root;
        char boot_id[PROTO_NONCE_HEX_LEN + 1];
        uint64_t orig_nofile_soft, orig_nofile_hard;
        Confine confine;

        /* transport state */
        Source listen_src;
        Source in_src; /* reads from the host */
        Source out_src; /* writes to the host; unused (fd -1) when in and out share one fd */
        bool connected;
        bool hup_backoff; /* serial: host side closed, polling again after a pause */
        bool hup_logged;
        Timer hup_timer;
        ProtoDecoder dec;

        /* session */
        bool in_session;
        uint64_t session_gen;

        /* outgoing queue */
        CorralOutq outq; /* util/corral-outq.h */
        bool out_full;

        /* objects */
        Channel **chan_table; /* hash buckets */
        Channel *channels; /* list of all */
        unsigned n_channels;
        Proc *procs;
        unsigned n_procs;
        uint64_t next_proc_id;
        uint64_t ring_reserved;
        Watch *watches;
        unsigned n_watches;
        uint64_t next_watch_id;
        size_t watch_bytes;
        Waiter *waiters;
        unsigned n_waiters;

        Source sig_src;
        Source timer_src;
        Timer *timers;
};

/* loop.c */
void agent_loop_preinit (Agent *a);
int agent_loop_init (Agent *a);
int agent_run (Agent *a);
void agent_loop_clear (Agent *a);

/* transport.c */
void transport_init (Agent *a);
int transport_start (Agent *a);
void transport_update_interest (Agent *a);
/* Writes what is queued for the host; called by the loop before every wait. */
void transport_flush (Agent *a);
void transport_stop (Agent *a);
void transport_process_input (Agent *a);

/* outq.c — every frame to the host goes through here; dropped outside a session. */
int agent_send_frame (
        Agent *a, uint8_t type, uint8_t flags, uint32_t channel, const void *payload, size_t len);
/* Takes ownership of obj. */
int agent_send_json (Agent *a, uint8_t type, cJSON *obj);
/* Negative errno when the connection is broken. */
int agent_outq_flush (Agent *a);
/* Writes what is queued, waiting at most timeout_ms (the agent is about to exit). */
void agent_outq_drain (Agent *a, int timeout_ms);
void agent_outq_drop_pending (Agent *a);
void agent_outq_clear (Agent *a);
static inline bool
agent_out_room (const Agent *a)
{
        return !a->out_full;
}
/* Called when the queue drained below LOW: wakes every producer. */
void agent_kick (Agent *a);

/* session.c */
void session_handle_frame (Agent *a, const ProtoFrame *f);
void session_end (Agent *a, const char *why);
void agent_respond (Agent *a, uint64_t id, cJSON *result /* (transfer full) */);
void agent_respond_error (Agent *a, uint64_t id, const char *code, const char *message, int errnum);
/* code from proto_errno_code (errnum); errnum positive. */
void agent_respond_errno (Agent *a, uint64_t id, int errnum, const char *message);
void agent_emit (Agent *a, const char *event, cJSON *params /* (transfer full) */);

/* Channels ----------------------------------------------------------------------------------- */

typedef struct {
        /* DATA from the host (credit already checked and consumed). */
        void (*data) (Agent *a, Channel *c, unsigned stream, bool eof, const uint8_t *p, size_t n);
        /* Credit grew: try to send. */
        void (*pump) (Agent *a, Channel *c);
        /* The channel goes away: host CLOSE (host_close true), a protocol violation or the end
         * of the session. The owner detaches; the channel is freed by the caller. */
        void (*drop) (Agent *a, Channel *c, bool host_close);
} ChannelOps;

struct Channel {
        uint32_t id;
        const ChannelOps *ops;
        void *owner;
        uint64_t credit; /* bytes the agent may still send */
        uint64_t in_credit; /* bytes the host may still send */
        Channel *hnext;
        Channel *prev, *next;
};

void channels_init (Agent *a);
void channels_clear (Agent *a);
Channel *channel_lookup (Agent *a, uint32_t id);
/* -EEXIST: id in use; -EBUSY: too many channels. */
int channel_new (Agent *a, uint32_t id, const ChannelOps *ops, void *owner, Channel **ret);
/* Frees the channel without calling ops->drop. */
void channel_free (Agent *a, Channel *c);
/* Calls ops->drop then frees; sends CLOSE to the host when send_close. */
void channel_abort (Agent *a, Channel *c, bool send_close);
void channel_grant (Agent *a, Channel *c, size_t n);
void channels_pump_all (Agent *a);
void channels_drop_all (Agent *a);
/* Validates "channel" in params; answers the request and returns false on error. */
bool channel_param (Agent *a, uint64_t id, const cJSON *params, uint32_t *ret);

/* Requests ----------------------------------------------------------------------------------- */

typedef void (*MethodFunc) (Agent *a, uint64_t id, const cJSON *params);

void method_exec_start (Agent *a, uint64_t id, const cJSON *params);
void method_exec_kill (Agent *a, uint64_t id, const cJSON *params);
void method_exec_list (Agent *a, uint64_t id, const cJSON *params);
void method_exec_attach (Agent *a, uint64_t id, const cJSON *params);
void method_exec_detach (Agent *a, uint64_t id, const cJSON *params);
void method_exec_resize (Agent *a, uint64_t id, const cJSON *params);
void method_wait_port (Agent *a, uint64_t id, const cJSON *params);
void method_wait_log (Agent *a, uint64_t id, const cJSON *params);
void method_file_read (Agent *a, uint64_t id, const cJSON *params);
void method_file_write (Agent *a, uint64_t id, const cJSON *params);
void method_file_stat (Agent *a, uint64_t id, const cJSON *params);
void method_file_list (Agent *a, uint64_t id, const cJSON *params);
void method_file_mkdir (Agent *a, uint64_t id, const cJSON *params);
void method_file_move (Agent *a, uint64_t id, const cJSON *params);
void method_file_remove (Agent *a, uint64_t id, const cJSON *params);
void method_watch_start (Agent *a, uint64_t id, const cJSON *params);
void method_watch_stop (Agent *a, uint64_t id, const cJSON *params);
void method_info (Agent *a, uint64_t id, const cJSON *params);
void method_system_poweroff (Agent *a, uint64_t id, const cJSON *params);

/* Processes (proc.c, spawn.c) ----------------------------------------------------------------- */

void procs_handle_sigchld (Agent *a);
void procs_session_end (Agent *a);
void procs_kill_foreground (Agent *a);
void procs_update_all (Agent *a);
void procs_free_all (Agent *a);
Proc *proc_lookup (Agent *a, uint64_t id);
/* Validates "proc" in params; answers the request and returns NULL on error. */
Proc *proc_param (Agent *a, uint64_t id, const cJSON *params);

/* wait.c: the log waiters of a process see every chunk it prints. */
void waiters_feed (Agent *a, Proc *p, unsigned stream, const uint8_t *data, size_t n);
void waiters_proc_done (Agent *a, Proc *p);
void waiters_free_all (Agent *a);

/* files.c */
void file_inherit_owner (Agent *a, const char *path);

/* watch.c */
void watches_free_all (Agent *a);
void watches_kick (Agent *a);

/* Helpers (util.c) ---------------------------------------------------------------------------- */

/* Validates an absolute path parameter; answers the request and returns NULL on error. */
const char *path_param (Agent *a, uint64_t id, const cJSON *params, const char *key);
/* 1: present and valid, 0: absent (default applies), answers and returns -1 on error. */
int int_param (Agent *a,
               uint64_t id,
               const cJSON *params,
               const char *key,
               int64_t min,
               int64_t max,
               int64_t *ret);
int bool_param (Agent *a, uint64_t id, const cJSON *params, const char *key, bool *ret);
/* A JSON string made from arbitrary bytes: invalid UTF-8 becomes U+FFFD. */
cJSON *json_string_from_bytes (const char *s, size_t len);
bool json_add_string_bytes (cJSON *obj, const char *key, const char *s, size_t len);
/* Upper bound of the serialised size of such a string, quotes included. */
size_t json_cost (const char *s, size_t len);
bool json_add_number (cJSON *obj, const char *key, double v);
int fd_set_nonblock (int fd);
