/* exec-env.c — who and what exec.start runs: the user (with the root / non-root rules), the
 * groups, the clean environment plus the request's, and argv.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_GROUPS 65536

void
user_clear (User *u)
{
        free (u->name);
        free (u->home);
        memset (u, 0, sizeof *u);
}

static int
user_from_pw (const struct passwd *pw, User *ret)
{
        ret->name = strdup (pw->pw_name);
        ret->home = strdup (pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : "/");
        ret->uid = pw->pw_uid;
        ret->gid = pw->pw_gid;
        if (!ret->name || !ret->home) {
                user_clear (ret);
                return -ENOMEM;
        }
        return 0;
}

/* Answers the request and returns false on error. */
bool
resolve_user (Agent *a, uint64_t id, const cJSON *params, User *ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (params, "user");
        const struct passwd *pw = NULL;
        int64_t uid;

        errno = 0;
        if (!item || cJSON_IsNull (item)) {
                if (!a->is_root) {
                        pw = getpwuid (geteuid ());
                } else if (a->default_user) {
                        pw = getpwnam (a->default_user);
                } else {
                        pw = getpwnam ("corral");
                        if (!pw)
                                pw = getpwnam ("nobody");
                }
        } else if (cJSON_IsString (item)) {
                const char *name;

                if (proto_json_get_string (params, "user", 256, &name) < 0 || !name[0]) {
                        agent_respond_error (a, id, "invalid-request", "invalid user", 0);
                        return false;
                }
                pw = getpwnam (name);
        } else if (proto_json_get_int (params, "user", 0, UINT32_MAX - 1, &uid) == 0) {
                pw = getpwuid ((uid_t) uid);
        } else {
                agent_respond_error (a, id, "invalid-request", "invalid user", 0);
                return false;
        }
        if (!pw) {
                agent_respond_error (a, id, "not-found", "no such user", errno > 0 ? errno : 0);
                return false;
        }
        if (!a->is_root && pw->pw_uid != geteuid ()) {
                agent_respond_error (a, id, "permission-denied",
                                     "the agent is not root and can only run as itself", EPERM);
                return false;
        }
        if (user_from_pw (pw, ret) < 0) {
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                return false;
        }
        return true;
}

gid_t *
user_groups (const User *u, int *ret_n)
{
        int n = 64;
        gid_t *groups = NULL;

        for (;;) {
                int want = n;
                gid_t *g = realloc (groups, sizeof *g * (size_t) n);

                if (!g)
                        break;
                groups = g;
                if (getgrouplist (u->name, u->gid, groups, &want) >= 0) {
                        *ret_n = want;
                        return groups;
                }
                if (want <= n || want > MAX_GROUPS)
                        break;
                n = want;
        }
        /* Fall back to the primary group only. */
        free (groups);
        groups = malloc (sizeof *groups);
        if (groups) {
                groups[0] = u->gid;
                *ret_n = 1;
        }
        return groups;
}

void
strv_free (char **v)
{
        if (!v)
                return;
        for (char **s = v; *s; s++)
                free (*s);
        free (v);
}

/* Sets or replaces KEY in a NULL-terminated env with room for max entries. */
static int
env_set (char **env, size_t *n, size_t max, const char *key, const char *value)
{
        size_t klen = strlen (key);
        char *entry;

        if (asprintf (&entry, "%s=%s", key, value) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++) {
                if (strncmp (env[i], key, klen) == 0 && env[i][klen] == '=') {
                        free (env[i]);
                        env[i] = entry;
                        return 0;
                }
        }
        if (*n >= max) {
                free (entry);
                return -E2BIG;
        }
        env[(*n)++] = entry;
        env[*n] = NULL;
        return 0;
}

static bool
env_has (char *const *env, size_t n, const char *key, size_t klen)
{
        for (size_t i = 0; i < n; i++)
                if (strncmp (env[i], key, klen) == 0 && env[i][klen] == '=')
                        return true;
        return false;
}

static bool
env_key_ok (const char *key, size_t len)
{
        if (len == 0 || len > 64 || (key[0] >= '0' && key[0] <= '9'))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
                      (key[i] >= '0' && key[i] <= '9') || key[i] == '_'))
                        return false;
        return true;
}

/* Reads the network proxy's variables (the proxy URLs with the session token, placeholders).
 * Only a file that no command could have written counts: owned by root (or us), not writable
 * by group or others. They never replace what is already set. */
static int
add_net_env (Agent *a, char **env, size_t *n, size_t max)
{
        int fd = open (a->net_env ? a->net_env : AGENT_NET_ENV, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        char *buf = NULL, *save = NULL;
        struct stat st;
        ssize_t len;
        int r = 0, lines = 0;

        if (fd < 0)
                return 0; /* no network session (yet) */
        if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) ||
            (st.st_uid != 0 && st.st_uid != geteuid ()) || (st.st_mode & 022) ||
            st.st_size > AGENT_NET_ENV_MAX_BYTES || !(buf = malloc ((size_t) st.st_size + 1))) {
                close (fd);
                return 0;
        }
        len = read (fd, buf, (size_t) st.st_size);
        close (fd);
        buf[len > 0 ? len : 0] = '\0';
        for (char *line = strtok_r (buf, "\n", &save); line && r == 0;
             line = strtok_r (NULL, "\n", &save)) {
                char *eq = strchr (line, '=');

                if (!eq || !env_key_ok (line, (size_t) (eq - line)) ||
                    env_has (env, *n, line, (size_t) (eq - line)) ||
                    ++lines > AGENT_NET_ENV_MAX_ENTRIES)
                        continue;
                *eq = '\0';
                r = env_set (env, n, max, line, eq + 1);
        }
        free (buf);
        return r;
}

char **
build_env (Agent *a, uint64_t id, const cJSON *params, const User *u, bool pty)
{
        const size_t max = AGENT_MAX_ENV + 8 + AGENT_NET_ENV_MAX_ENTRIES;
        const cJSON *env = NULL, *item;
        char **v;
        size_t n = 0;
        int r;

        r = proto_json_get_object (params, "env", &env);
        if (r == -EINVAL) {
                agent_respond_error (a, id, "invalid-request", "env must be an object", 0);
                return NULL;
        }
        if (env && cJSON_GetArraySize (env) > AGENT_MAX_ENV) {
                agent_respond_error (a, id, "too-large", "too many env entries", E2BIG);
                return NULL;
        }
        v = calloc (max + 1, sizeof *v);
        if (!v)
                goto oom;
        if (env_set (v, &n, max, "PATH",
                     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") < 0 ||
            env_set (v, &n, max, "HOME", u->home) < 0 ||
            env_set (v, &n, max, "USER", u->name) < 0 ||
            env_set (v, &n, max, "LOGNAME", u->name) < 0 ||
            env_set (v, &n, max, "SHELL", "/bin/sh") < 0 ||
            env_set (v, &n, max, "LANG", "C.UTF-8") < 0 ||
            (pty && env_set (v, &n, max, "TERM", "xterm-256color") < 0) ||
            add_net_env (a, v, &n, max) < 0)
                goto oom;
        cJSON_ArrayForEach (item, env) {
                if (!item->string || !item->string[0] || strchr (item->string, '=') ||
                    !cJSON_IsString (item) || !item->valuestring) {
                        agent_respond_error (
                                a, id, "invalid-request",
                                "env keys must be non-empty without '=', values strings", 0);
                        strv_free (v);
                        return NULL;
                }
                if (env_set (v, &n, max, item->string, item->valuestring) < 0)
                        goto oom;
        }
        return v;
oom:
        strv_free (v);
        agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
        return NULL;
}

/* argv from "argv" or "shell"; a copy the Proc keeps. */
char **
build_argv (Agent *a, uint64_t id, const cJSON *params, char **ret_shell)
{
        const cJSON *arr = NULL, *item;
        const char *shell = NULL;
        int ra = proto_json_get_array (params, "argv", 0, &arr);
        int rs = proto_json_get_string (params, "shell", 0, &shell);
        char **v;
        size_t n = 0;

        if (ra == -EINVAL || rs == -EINVAL || (ra == 0) == (rs == 0)) {
                agent_respond_error (a, id, "invalid-request",
                                     "exactly one of argv or shell is required", 0);
                return NULL;
        }
        if (shell) {
                v = calloc (4, sizeof *v);
                *ret_shell = strdup (shell);
                if (!v || !*ret_shell || !(v[0] = strdup ("/bin/sh")) || !(v[1] = strdup ("-c")) ||
                    !(v[2] = strdup (shell)))
                        goto oom;
                return v;
        }
        if (cJSON_GetArraySize (arr) < 1 || cJSON_GetArraySize (arr) > AGENT_MAX_ARGV) {
                agent_respond_error (a, id,
                                     cJSON_GetArraySize (arr) < 1 ? "invalid-request" : "too-large",
                                     "argv must have 1 to 4096 entries", 0);
                return NULL;
        }
        v = calloc ((size_t) cJSON_GetArraySize (arr) + 1, sizeof *v);
        if (!v)
                goto oom;
        cJSON_ArrayForEach (item, arr) {
                if (!cJSON_IsString (item) || !item->valuestring) {
                        strv_free (v);
                        agent_respond_error (a, id, "invalid-request",
                                             "argv entries must be strings", 0);
                        return NULL;
                }
                v[n] = strdup (item->valuestring);
                if (!v[n++])
                        goto oom;
        }
        return v;
oom:
        strv_free (v);
        free (*ret_shell);
        *ret_shell = NULL;
        agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
        return NULL;
}
