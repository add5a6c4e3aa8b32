%% @doc The loadlab reference target on Cowboy 2.8 (../../CONTRACT.md): reads and checks the
%% environment, loads the portfolio, starts Cowboy's listener (ranch_tcp, or ranch_ssl with
%% TLS_CERT and TLS_KEY) with BACKLOG, and prints `listening on ADDR:PORT' once it is bound.
%% WORKERS is the BEAM's scheduler count, set by run.sh (+S); this module only checks it.
%% A configuration mistake is one line on stderr naming the variable and the fix, then exit
%% status 2; nothing here may crash with a stack trace for one.
-module(loadlab_cowboy).

-export([main/0]).

-define(LISTENER, loadlab_http).

main() ->
    Config = config(os:getenv()),
    {ok, _} = application:ensure_all_started(cowboy),
    {ok, _} = application:ensure_all_started(jsx),
    loadlab_portfolio:load(maps:get(content_dir, Config)),
    loadlab_contract:init(),
    loadlab_upstream:init(maps:get(upstream, Config)),
    Dispatch = cowboy_router:compile([{'_', routes()}]),
    ProtoOpts = #{env => #{dispatch => Dispatch}},
    %% A listener that cannot start is reported below in one line: Ranch's supervisor reports
    %% of it would only repeat that as several screens of stderr.
    #{level := Level} = logger:get_primary_config(),
    ok = logger:set_primary_config(level, emergency),
    Started =
        case maps:get(tls, Config) of
            none ->
                cowboy:start_clear(?LISTENER, transport(Config, []), ProtoOpts);
            {Cert, Key} ->
                %% cowboy:start_tls offers h2 and http/1.1 by ALPN. TLS 1.2 resumes by session
                %% id (ssl's server default); TLS 1.3 tickets are off in ssl unless asked for,
                %% and its user's guide enables them with stateless tickets.
                TlsOpts = [{certfile, Cert}, {keyfile, Key}, {session_tickets, stateless}],
                cowboy:start_tls(?LISTENER, transport(Config, TlsOpts), ProtoOpts)
        end,
    case Started of
        {ok, _} ->
            ok = logger:set_primary_config(level, Level);
        {error, Reason} ->
            config_error(
                "cannot listen on ~s:~s: ~tp (pick another PORT or HOST; with TLS_CERT and TLS_KEY, "
                "give a PEM certificate chain and its own PEM private key)",
                [os:getenv("HOST", "127.0.0.1"), os:getenv("PORT", "0"), Reason]
            )
    end,
    {Ip, Port} = ranch:get_addr(?LISTENER),
    io:format("listening on ~s:~b~n", [format_ip(Ip), Port]).

routes() ->
    Page = fun(Path, Name) -> {Path, loadlab_handler, Name} end,
    [
        Page("/plaintext", plaintext),
        Page("/json", json),
        Page("/healthz", healthz),
        {"/delay", loadlab_delay, []},
        Page("/block", block),
        Page("/compute", compute),
        Page("/bytes", bytes),
        {"/echo", loadlab_echo, []},
        {"/upstream", loadlab_upstream, []},
        Page("/", home),
        Page("/blogs", blogs),
        Page("/blogs/:id", blog),
        Page("/version", version),
        Page('_', not_found)
    ].

%% Ranch's transport options: the listening socket's address, port and backlog, plus TLS.
transport(Config, TlsOpts) ->
    Ip = maps:get(host, Config),
    Family = [inet6 || tuple_size(Ip) =:= 8],
    SocketOpts =
        Family ++
            [{ip, Ip}, {port, maps:get(port, Config)}, {backlog, maps:get(backlog, Config)}] ++
            TlsOpts,
    #{socket_opts => SocketOpts}.

format_ip(Ip) when tuple_size(Ip) =:= 8 -> "[" ++ inet:ntoa(Ip) ++ "]";
format_ip(Ip) -> inet:ntoa(Ip).

%% The environment, checked. `Env' is os:getenv()'s list of "NAME=VALUE" strings.
config(EnvList) ->
    Env = maps:from_list([
        {Name, Value}
     || Pair <- EnvList, [Name, Value] <- [string:split(Pair, "=")]
    ]),
    Get = fun(Name) -> maps:get(Name, Env, false) end,
    _ = positive("WORKERS", Get("WORKERS"), 1024),
    Cert = nonempty(Get("TLS_CERT")),
    Key = nonempty(Get("TLS_KEY")),
    Tls =
        case {Cert, Key} of
            {false, false} ->
                none;
            {false, _} ->
                half_tls(Cert, Key);
            {_, false} ->
                half_tls(Cert, Key);
            _ ->
                readable("TLS_CERT", Cert),
                readable("TLS_KEY", Key),
                {Cert, Key}
        end,
    #{
        host => host(Get("HOST")),
        port => port(Get("PORT")),
        backlog => positive("BACKLOG", Get("BACKLOG"), 1 bsl 31 - 1),
        upstream => upstream(nonempty(Get("UPSTREAM_URL")), nonempty(Get("UPSTREAM_CA"))),
        content_dir =>
            case Get("CONTENT_DIR") of
                false -> "../content";
                Dir -> Dir
            end,
        tls => Tls
    }.

nonempty("") -> false;
nonempty(Value) -> Value.

half_tls(Cert, Key) ->
    Show = fun
        (false) -> "";
        (V) -> V
    end,
    config_error(
        "TLS_CERT and TLS_KEY go together: set both (a PEM certificate chain and its PEM private "
        "key) to serve HTTPS, or neither for plain HTTP; got TLS_CERT=\"~ts\" TLS_KEY=\"~ts\"",
        [Show(Cert), Show(Key)]
    ).

readable(Name, Path) ->
    case file:read_file_info(Path) of
        {ok, _} -> ok;
        {error, Reason} -> config_error("~s=~ts: cannot read it: ~s", [Name, Path, file:format_error(Reason)])
    end.

%% A whole number from 1 to Max, or the default (the machine's cores for WORKERS, 1024 for
%% BACKLOG) when unset.
positive("WORKERS", false, _) ->
    erlang:system_info(logical_processors_available);
positive("BACKLOG", false, _) ->
    1024;
positive(Name, Raw, Max) ->
    case digits(Raw) of
        {ok, N} when N >= 1, N =< Max -> N;
        _ -> config_error("~s must be a whole number from 1 to ~b, got ~tp: fix or unset it", [Name, Max, Raw])
    end.

port(false) ->
    0;
port(Raw) ->
    case digits(Raw) of
        {ok, N} when N =< 65535 -> N;
        _ -> config_error("PORT must be a port number from 0 to 65535, got ~tp", [Raw])
    end.

host(false) ->
    {127, 0, 0, 1};
host(Raw) ->
    case inet:parse_strict_address(Raw) of
        {ok, Ip} -> Ip;
        {error, _} -> config_error("HOST must be an IP address such as 127.0.0.1, got ~tp", [Raw])
    end.

digits(Raw) ->
    case Raw =/= "" andalso lists:all(fun(C) -> C >= $0 andalso C =< $9 end, Raw) of
        true -> {ok, list_to_integer(Raw)};
        false -> error
    end.

upstream(false, _) ->
    none;
upstream(Url, Ca) ->
    case uri_string:parse(Url) of
        #{scheme := Scheme, host := Host} when Host =/= "", Scheme =:= "http" orelse Scheme =:= "https" ->
            CaFile =
                case {Scheme, Ca} of
                    {"https", false} ->
                        system;
                    {"https", _} ->
                        readable("UPSTREAM_CA", Ca),
                        Ca;
                    {"http", _} ->
                        none
                end,
            {Url, CaFile};
        _ ->
            config_error(
                "UPSTREAM_URL must be an http:// or https:// URL such as http://127.0.0.1:9100/, got ~tp",
                [Url]
            )
    end.

-spec config_error(string(), list()) -> no_return().
config_error(Format, Args) ->
    io:format(standard_error, Format ++ "~n", Args),
    erlang:halt(2).
