"""Credentials taken out of command lines and environment values before
anything writes them down: by the name they are given (--db-password X,
api_key=X, sslPassword=X, Authorization: X, -p X for sshpass) and by their
shape (a URL's user:password@, a JWT, a PEM block, a known token prefix, a
long random-looking string). An argument that is itself a command line (the
string of `bash -c`, `ssh host CMD`, a rewritten process title) is split into
its shell words and redacted as one. One module for every writer: the probe,
record's samplers, py-spy's raw stacks, run.json.

Standard library only and no `re` (the probe runs this at every process's
start-up, where an import is what costs)."""

REDACTED = "<redacted>"

# An option or key names a credential when its last word (after - _ . or a
# camelCase hump, trailing digits dropped) is one of these...
_SECRET_WORDS = frozenset((
    "KEY", "PW", "PWD", "PSK", "JWT", "OTP", "AUTH", "CRED", "CREDS", "SIG", "SIGNATURE", "AUTHORIZATION",
    "BEARER", "COOKIE", "COOKIES", "PASSIN", "PASSOUT",
))
# ...or ends with one of these (sslpassword, hftoken, storepass, apikey)...
_SECRET_ENDINGS = (
    "PASSWORD", "PASSWD", "PASSPHRASE", "PASSCODE", "PASSKEY", "PASS", "SECRET", "SECRETS", "TOKEN",
    "CREDENTIAL", "CREDENTIALS", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "AUTHKEY", "MASTERKEY",
    "SIGNINGKEY", "ENCRYPTIONKEY",
)
# ...and is not one of these words that end like one.
_NOT_SECRET = ("BYPASS", "COMPASS", "SURPASS")

# Variable names never recorded: a name with one of these words in it, or
# one of the short ones as a whole part of it (SLURM_DB_PW). Broader than an
# option's name: a dropped variable costs nothing.
_SECRET_IN_NAMES = ("KEY", "SECRET", "TOKEN", "PASS", "CRED", "AUTH", "COOKIE", "SESSION", "SIGNATURE",
                    "JWT", "PSK", "PRIVATE", "CERT")
_SECRET_NAME_PARTS = ("PW", "PWD", "PIN")

# Short options that carry a credential, by the client that reads them
# (decided by the program word before them: on their own, -p is a port and -u
# a user). "" the value is the credential, whole; else the separator after
# which it is (curl's -u user:password, smbclient's -U user%password).
_CLIENT_OPTIONS = {}
for _programs, _options in (
    (("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlshow", "mysqlpump", "mysqlsh",
      "mariadb", "mariadb-dump", "mariadb-admin", "mongo", "mongosh", "mongodump", "mongorestore",
      "mongoexport", "mongoimport", "mongostat", "mongotop", "sshpass", "7z", "7za", "7zr", "rar", "unrar"),
     {"-p": ""}),
    (("redis-cli", "keydb-cli", "valkey-cli"), {"-a": ""}),
    (("curl",), {"-u": ":", "--user": ":", "-U": ":", "--proxy-user": ":"}),
    (("lftp",), {"-u": ","}),
    (("smbclient", "rpcclient", "smbget", "smbcacls"), {"-U": "%", "--user": "%"}),
    (("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldappasswd", "ldapcompare",
      "ldapmodrdn", "ldapexop"), {"-w": ""}),
    (("sqlcmd", "bcp", "osql", "ipmitool", "zip", "unzip", "zipcloak"), {"-P": ""}),
    (("openssl",), {"-k": ""}),
):
    for _program in _programs:
        _CLIENT_OPTIONS[_program] = _options
# Programs that end a client's options: what follows them is theirs
# (sshpass -p X ssh -p 2222 host).
_RUNNERS = frozenset(("ssh", "bash", "sh", "dash", "zsh", "ksh", "env", "sudo", "srun", "mpirun", "mpiexec",
                      "torchrun", "timeout", "nohup", "exec", "xargs", "docker", "podman", "kubectl"))
# A credential's scheme, kept in sight before it: Authorization: Bearer <redacted>.
_AUTH_SCHEMES = frozenset(("bearer", "basic", "digest", "token", "negotiate", "ntlm"))
# Token prefixes of well-known services (GitHub, GitLab, Hugging Face, OpenAI,
# Slack, AWS access key ids, Google, npm, PyPI, Stripe, SendGrid, Databricks).
_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "hf_", "sk-", "xoxb-",
                   "xoxp-", "xoxa-", "xoxr-", "AKIA", "ASIA", "AIza", "ya29.", "npm_", "pypi-", "sk_live_",
                   "rk_live_", "sk_test_", "SG.", "dapi")
_SPACE = " \t\n\r\f\v"
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
_HEX = frozenset("0123456789abcdefABCDEF")
_LISTS = "&,;?#"  # list and query-string separators, split before key=value
_MORE = "more"  # a credential given attached may go on over the next words of a joined line


def secret_name(name):
    """Whether an environment variable's name says it may hold a credential."""
    upper = name.upper()
    if any(word in upper for word in _SECRET_IN_NAMES):
        return True
    parts = upper.replace("-", "_").replace(".", "_").split("_")
    return any(part in _SECRET_NAME_PARTS for part in parts)


def secret_option(name):
    """Whether an option or key names a credential, by its last word in any
    case and separator: --db-password, --API_KEY, sslPassword, -passin,
    storepass, X-Auth-Token, {"password"; not --password-file, --max-tokens,
    --tokenizer."""
    name = name.rstrip("0123456789-_.\"':")
    word = name[max(name.rfind("-"), name.rfind("_"), name.rfind(".")) + 1:]
    if not word.isalnum():  # main(password, {"password
        i = len(word)
        while i and word[i - 1].isalnum():
            i -= 1
        word = word[i:]
    if not word.islower() and not word.isupper():
        for i in range(len(word) - 1, 0, -1):  # camelCase: the last hump
            if word[i].isupper() and not word[i - 1].isupper():
                word = word[i:]
                break
    word = word.upper()
    return word in _SECRET_WORDS or (word.endswith(_SECRET_ENDINGS) and not word.endswith(_NOT_SECRET))


def redact_argv(argv):
    """argv with every credential in it replaced by REDACTED; an argument
    that is a command line in itself is redacted word by word, the rest of
    its text kept as it was."""
    return _redact_words(list(argv), False)


def redact_value(value):
    """An environment variable's value (a word, a k=v list, a URL, a command
    line) with every credential in it replaced."""
    return _redact_arg(value, None)[0]


def redact_joined(text):
    """A command line whose argv was joined with spaces (py-spy's process
    frames), redacted: where argv's boundaries are lost, a credential named
    by the word before it runs on to the next option (--password my pass
    phrase -v: all three words)."""
    if "-----BEGIN" in text:  # a PEM block: its words are no argument's
        text = _without_pem(text)
    words = _redact_words(text.split(" "), True)
    return " ".join(word for word in words if word is not None)


def _redact_words(words, joined):
    """argv (or a shell line's words, or a joined line's) redacted; in a
    joined line the words a credential ran on over are None."""
    out = []
    program = None
    take = None  # how the word after an option that takes a credential is redacted
    for word in words:
        if take is not None:
            if not word:  # an empty argument, or two spaces of a joined line
                out.append(word)
                take = take if joined else None
                continue
            if _is_option(word):
                take = None  # the option took no value, or (joined) the value has ended
            elif take == "" and word.lower() in _AUTH_SCHEMES:
                out.append(word)
                continue
            elif take is _MORE:
                out.append(None)
                continue
            else:
                out.append(REDACTED if take == "" else _after(word, take))
                take = _MORE if joined and take == "" else None
                continue
        if word[:1] != "-":  # a program's name, perhaps: sshpass, /usr/bin/mysql, ProxyCommand=sshpass
            base = word[word.rfind("/") + 1:]
            base = base[base.rfind("=") + 1:].lstrip("'\"")
            if not out or base in _CLIENT_OPTIONS or base in _RUNNERS or base.startswith("python"):
                program = base
        word, take = _redact_arg(word, program)
        if take is _MORE and not joined:
            take = None
        out.append(word)
    return out


def _redact_arg(arg, program):
    """One argument redacted, and how the next is taken (None: as itself;
    "": whole; a separator: after it; _MORE: see redact_joined)."""
    if arg[:1] != "-" and _inert(arg):  # most arguments
        return (REDACTED if _looks_secret(arg) else arg), ("" if arg.lower() == "bearer" else None)
    if "-----BEGIN" in arg:
        arg = _without_pem(arg)
    if " " in arg or "\n" in arg or "\t" in arg:
        header = _header(arg)
        return (header if header is not None else _redact_line(arg)), None
    if arg[:1] == "-" and program in _CLIENT_OPTIONS:
        options = _CLIENT_OPTIONS[program]
        if arg in options:
            return arg, options[arg]
        option, eq, value = arg.partition("=")
        if eq and option in options:
            return option + "=" + _after(value, options[option]), None
        if arg[:2] in options and arg[1:2] != "-":  # attached: -pPASSWORD, -ualice:pw
            return arg[:2] + _after(arg[2:], options[arg[:2]]), None
    left, eq, value = arg.partition("=")
    if eq:
        if value and secret_option(left):
            return _redact_text(left) + "=" + REDACTED, _MORE
        return _redact_text(arg), None
    left, colon, value = arg.partition(":")
    if colon and value and secret_option(left):  # pass:X, Authorization:Basic X
        return left + ":" + REDACTED, _MORE
    if (_is_option(arg) and len(arg) > 2 or arg[-1:] == ":") and secret_option(arg):
        return arg, ""
    return _redact_text(arg), None


def _redact_text(text):
    """A word (no space in it) redacted: token shapes, a URL's password, the
    secret values of key=value and key:value parts of lists and queries."""
    if _looks_secret(text):
        return REDACTED
    if _inert(text):
        return text
    if "://" in text and "@" in text:
        text = _without_password(text)
    for sep in _LISTS:
        if sep in text:
            return sep.join([_redact_text(part) for part in text.split(sep)])
    left, eq, value = text.partition("=")
    if eq:
        if value and secret_option(left):
            return left + "=" + REDACTED
        return _redact_text(left) + "=" + _redact_text(value)
    left, colon, value = text.partition(":")
    if colon:
        if value and secret_option(left):  # pass:X, "password":"X"
            return left + ":" + REDACTED
        return ":".join([REDACTED if _looks_secret(part) else part for part in text.split(":")])
    return text


def _redact_line(text):
    """A command line (or code, or a sentence) given as one string, redacted
    word by word; the text between and around changed words kept as it was."""
    spans = _shell_words(text)
    words = [word for _, _, word in spans]
    redacted = _redact_words(words, False)
    if redacted == words:
        return text
    out, at = [], 0
    for (start, end, word), new in zip(spans, redacted):
        if new != word:
            quote = text[start] if text[start] in "'\"" and text[end - 1] == text[start] else ""
            out += [text[at:start], quote, new, quote]  # (a quoted command line stays quoted)
            at = end
    return "".join(out) + text[at:]


def _shell_words(text):
    """The shell words of text, (start, end, word) each, quotes and
    backslashes taken out; an unbalanced quote is taken as a character."""
    spans = []
    if "'" not in text and '"' not in text and "\\" not in text:
        at = 0
        for word in text.split():
            start = text.index(word, at)
            at = start + len(word)
            spans.append((start, at, word))
        return spans
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in _SPACE:
            i += 1
        if i == n:
            break
        start, parts = i, []
        while i < n and text[i] not in _SPACE:
            c = text[i]
            if c == "'" and text.find("'", i + 1) > 0:
                end = text.index("'", i + 1)
                parts.append(text[i + 1:end])
                i = end + 1
            elif c == '"' and text.find('"', i + 1) > 0:
                i += 1
                while i < n and text[i] != '"':
                    if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`':
                        i += 1
                    parts.append(text[i])
                    i += 1
                i += 1
            elif c == "\\" and i + 1 < n:
                parts.append(text[i + 1])
                i += 2
            else:
                parts.append(c)
                i += 1
        spans.append((start, i, "".join(parts)))
    return spans


def _header(arg):
    """An HTTP header line with its credential redacted (Authorization:
    Bearer X, X-Api-Key: X, Cookie: a=b; c=d), or None if arg is not one."""
    name, colon, value = arg.partition(":")
    if not colon or not value.strip() or not _plain(name.strip()) or not secret_option(name.strip()):
        return None
    lead = value[:len(value) - len(value.lstrip())]
    scheme = value.split(None, 1)[0]
    kept = scheme + " " if scheme.lower() in _AUTH_SCHEMES and len(value.split(None, 1)) > 1 else ""
    return name + ":" + lead + kept + REDACTED


def _without_pem(text):
    """text with each PEM block (-----BEGIN X-----...-----END X-----, spaces
    and newlines in it) replaced, to its end where it has none."""
    start = text.find("-----BEGIN")
    while start >= 0:
        end = text.find("-----END", start)
        end = len(text) if end < 0 else text.find("-----", end + 8)
        end = len(text) if end < 0 else end + 5
        text = text[:start] + REDACTED + text[end:]
        start = text.find("-----BEGIN", start + len(REDACTED))
    return text


def _after(value, separator):
    """A credential's value redacted: whole, or after the separator (user:pw)."""
    if not separator:
        return REDACTED
    user, sep, password = value.partition(separator)
    return user + sep + REDACTED if sep and password else value


def _without_password(text):
    """A URL with the password of its user:password@ replaced (the user kept)."""
    scheme, _, rest = text.partition("://")
    end = len(rest)
    for c in "?#":
        if c in rest:
            end = min(end, rest.index(c))
    at = rest.rfind("@", 0, end)
    if at < 0:
        return text
    user, colon, password = rest[:at].partition(":")
    if not colon and _looks_secret(user):  # https://TOKEN@github.com
        return scheme + "://" + REDACTED + rest[at:]
    if not colon or not password or "/" in user:
        return text
    # (user:pa/ss@host is a password with a slash; host:8080/@scope is a path)
    if "/" in password and password.split("/", 1)[0].isdigit():
        return text
    return scheme + "://" + user + ":" + REDACTED + rest[at:]


def _looks_secret(token):
    """A value that is a credential whatever its name: a JWT, a PEM block, a
    token of a well-known service, a long hex string (not a number) or a long
    base64 one with upper and lower case and digits (not a path)."""
    n = len(token)
    if n < 20:
        return False
    if token.startswith("eyJ") and token.count(".") == 2:
        return True
    if token.startswith(_TOKEN_PREFIXES):
        rest = token[len(next(p for p in _TOKEN_PREFIXES if token.startswith(p))):]
        bare = rest.replace("-", "").replace("_", "")
        return len(rest) >= 16 and bare.isalnum() and (
            not bare.islower() and not bare.isupper() or bare == rest and not bare.isalpha() and not bare.isdigit())
    if n < 32:
        return False
    chars = set(token)
    if chars <= _HEX and not token.isdigit():
        return True
    if n < 40 or not chars <= _B64 or token[0] == "/" or "//" in token:
        return False
    if "/" in token and ("-" in chars or "_" in chars):  # a path or a model's name, not base64
        return False
    return (any(c.isupper() for c in token) and any(c.islower() for c in token)
            and any(c.isdigit() for c in token))


def _is_option(word):
    """-x, --name (not a negative number, not a lone -)."""
    return word[:1] == "-" and len(word) > 1 and not word[1].isdigit()


def _plain(text):
    """Only letters, digits and - _ . / in text: a path, a number, a name."""
    return text.replace("-", "").replace("_", "").replace(".", "").replace("/", "").isalnum()


def _inert(text):
    """A word no rule but a credential's shape applies to: plain, or too
    short for a token with no = : @ or space in it (main(8, or [/work,)."""
    return _plain(text) or (len(text) < 20 and "=" not in text and ":" not in text and "@" not in text
                            and " " not in text and text.isprintable())
