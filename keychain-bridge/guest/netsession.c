/* netsession.c — see netsession.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "netsession.h"

#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLACEHOLDER_PREFIX "corral-ph-"
#define PLACEHOLDER_LEN 42
#define MAX_BUNDLE (8 * 1024 * 1024)

/* Names a placeholder may not take: they would change how commands run or where they connect
 * (the agent never lets net.env override its base environment either). */
static const char *const reserved[] = {
        "PATH",        "HOME",      "USER",     "LOGNAME",
        "SHELL",       "LANG",      "TERM",     "HTTP_PROXY",
        "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy",
        "https_proxy", "all_proxy", "no_proxy", "NODE_EXTRA_CA_CERTS",
        "PWD",         NULL,
};

static bool
chars_ok (const char *s, size_t min, size_t max, const char *extra)
{
        size_t n = strlen (s);

        if (n < min || n > max)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '_' || strchr (extra, *p)))
                        return false;
        return true;
}

static bool
name_ok (const char *name)
{
        if (!chars_ok (name, 1, 64, "") || (name[0] >= '0' && name[0] <= '9') ||
            strncmp (name, "LD_", 3) == 0)
                return false;
        for (size_t i = 0; reserved[i]; i++)
                if (strcmp (name, reserved[i]) == 0)
                        return false;
        return true;
}

static bool
placeholder_ok (const char *v)
{
        return strlen (v) == PLACEHOLDER_LEN &&
               strncmp (v, PLACEHOLDER_PREFIX, strlen (PLACEHOLDER_PREFIX)) == 0 &&
               chars_ok (v, PLACEHOLDER_LEN, PLACEHOLDER_LEN, "-");
}

/* PEM only: printable ASCII lines, starting with a certificate. */
static bool
pem_ok (const char *pem)
{
        if (strlen (pem) > NETSESSION_MAX_CA ||
            strncmp (pem, "-----BEGIN CERTIFICATE-----", 27) != 0)
                return false;
        for (const char *p = pem; *p; p++)
                if ((*p < 0x20 || *p > 0x7e) && *p != '\n' && *p != '\r')
                        return false;
        return true;
}

void
netsession_clear (NetSession *s)
{
        free (s->token);
        for (size_t i = 0; i < s->n_env; i++) {
                free (s->names[i]);
                free (s->values[i]);
        }
        free (s->ca_pem);
        memset (s, 0, sizeof *s);
}

static int
parse_env (const cJSON *env, NetSession *s)
{
        const cJSON *item;

        if (cJSON_GetArraySize (env) > NETSESSION_MAX_ENV)
                return -EINVAL;
        cJSON_ArrayForEach (item, env) {
                if (!item->string || !cJSON_IsString (item) || !item->valuestring ||
                    !name_ok (item->string) || !placeholder_ok (item->valuestring))
                        return -EINVAL;
                s->names[s->n_env] = strdup (item->string);
                s->values[s->n_env] = strdup (item->valuestring);
                s->n_env++;
                if (!s->names[s->n_env - 1] || !s->values[s->n_env - 1])
                        return -ENOMEM;
        }
        return 0;
}

int
netsession_parse (const cJSON *result, NetSession *s)
{
        const char *token = NULL, *ca = NULL;
        const cJSON *env = NULL;
        int64_t version;
        int r;

        memset (s, 0, sizeof *s);
        if (!result || proto_json_get_int (result, "version", 1, 1, &version) < 0 ||
            proto_json_get_string (result, "token", 128, &token) < 0 ||
            !chars_ok (token, 16, 128, "-") || proto_json_get_object (result, "env", &env) < 0 ||
            (r = proto_json_get_string (result, "ca", NETSESSION_MAX_CA, &ca)) == -EINVAL ||
            (ca && !pem_ok (ca)))
                return -EINVAL;
        s->token = strdup (token);
        s->ca_pem = ca ? strdup (ca) : NULL;
        if (!s->token || (ca && !s->ca_pem)) {
                netsession_clear (s);
                return -ENOMEM;
        }
        r = parse_env (env, s);
        if (r < 0)
                netsession_clear (s);
        return r;
}

/* Writes path atomically (a temporary file in the same folder, then rename). */
static int
write_file (const char *path, const char *data, size_t len, mode_t mode)
{
        char tmp[4096];
        int fd, r = 0;

        if ((size_t) snprintf (tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp)
                return -ENAMETOOLONG;
        fd = mkostemp (tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t off = 0; off < len && r == 0;) {
                ssize_t n = write (fd, data + off, len - off);

                if (n < 0 && errno != EINTR)
                        r = -errno;
                else if (n > 0)
                        off += (size_t) n;
        }
        if (r == 0 && (fchmod (fd, mode) < 0 || fsync (fd) < 0))
                r = -errno;
        if (close (fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename (tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink (tmp);
        return r;
}

static int
append (char **buf, size_t *len, const char *key, const char *value)
{
        char *line;
        int n = asprintf (&line, "%s=%s\n", key, value);
        char *grown;

        if (n < 0)
                return -ENOMEM;
        grown = realloc (*buf, *len + (size_t) n + 1);
        if (!grown) {
                free (line);
                return -ENOMEM;
        }
        memcpy (grown + *len, line, (size_t) n + 1);
        *buf = grown;
        *len += (size_t) n;
        free (line);
        return 0;
}

int
netsession_write_env (const NetSession *s, const char *dir, int port)
{
        static const char *const proxy_vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                                  "http_proxy", "https_proxy", "all_proxy",
                                                  NULL };
        char url[256], ca_path[4096], env_path[4096];
        char *buf = NULL;
        size_t len = 0;
        int r = 0;

        snprintf (url, sizeof url, "http://corral:%s@127.0.0.1:%d", s->token, port);
        if ((size_t) snprintf (ca_path, sizeof ca_path, "%s/session-ca.pem", dir) >=
                    sizeof ca_path ||
            (size_t) snprintf (env_path, sizeof env_path, "%s/net.env", dir) >= sizeof env_path)
                return -ENAMETOOLONG;
        for (size_t i = 0; proxy_vars[i] && r == 0; i++)
                r = append (&buf, &len, proxy_vars[i], url);
        /* Servers inside the VM itself are not the proxy's business. */
        if (r == 0)
                r = append (&buf, &len, "NO_PROXY", "localhost,127.0.0.1,::1");
        if (r == 0)
                r = append (&buf, &len, "no_proxy", "localhost,127.0.0.1,::1");
        if (r == 0 && s->ca_pem) {
                r = write_file (ca_path, s->ca_pem, strlen (s->ca_pem), 0644);
                /* Node.js keeps its own CA list; everything else reads the system bundle. */
                if (r == 0)
                        r = append (&buf, &len, "NODE_EXTRA_CA_CERTS", ca_path);
        }
        for (size_t i = 0; i < s->n_env && r == 0; i++)
                r = append (&buf, &len, s->names[i], s->values[i]);
        if (r == 0)
                r = write_file (env_path, buf, len, NETSESSION_ENV_MODE);
        free (buf);
        return r;
}

/* The bundle up to an earlier session's marker (or all of it); "" when there is none. */
static int
read_base (const char *bundle, char **ret, size_t *ret_len, bool *ret_marked)
{
        FILE *f = fopen (bundle, "re");
        char *data = malloc (MAX_BUNDLE + 1), *marker;
        size_t n;

        if (!data) {
                if (f)
                        fclose (f);
                return -ENOMEM;
        }
        n = f ? fread (data, 1, MAX_BUNDLE + 1, f) : 0;
        if (f)
                fclose (f);
        if (n > MAX_BUNDLE) {
                free (data);
                return -EFBIG;
        }
        data[n] = '\0';
        marker = strstr (data, NETSESSION_MARKER);
        *ret_marked = marker != NULL;
        if (marker)
                n = (size_t) (marker - data);
        data[n] = '\0';
        *ret = data;
        *ret_len = n;
        return 0;
}

int
netsession_write_trust (const NetSession *s, const char *bundle)
{
        char *data = NULL, *out;
        size_t len = 0, cap;
        bool marked = false;
        int r = read_base (bundle, &data, &len, &marked);

        if (r < 0)
                return r;
        if (!s->ca_pem && !marked) {
                free (data); /* nothing to add, nothing to remove */
                return 0;
        }
        cap = len + sizeof NETSESSION_MARKER + 4 + (s->ca_pem ? strlen (s->ca_pem) : 0);
        out = malloc (cap);
        if (!out) {
                free (data);
                return -ENOMEM;
        }
        memcpy (out, data, len);
        if (s->ca_pem) {
                if (len > 0 && out[len - 1] != '\n')
                        out[len++] = '\n';
                len += (size_t) sprintf (out + len, "%s\n%s", NETSESSION_MARKER, s->ca_pem);
                if (out[len - 1] != '\n')
                        out[len++] = '\n';
        }
        r = write_file (bundle, out, len, 0644);
        free (data);
        free (out);
        return r;
}
