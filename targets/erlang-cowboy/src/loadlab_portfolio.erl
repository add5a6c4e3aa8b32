%% @doc The portfolio (../../content/README.md): templates and posts read once at start-up
%% (load/1), each post converted to HTML then, and the layout filled per request by plain
%% sequential string replacement. Kept in persistent_term; `loadlab lab verify' compares every
%% page byte for byte with content/expected/. A content directory it cannot read is a
%% configuration error (stderr, exit status 2), never a crash.
-module(loadlab_portfolio).

-export([load/1, home/0, blogs/0, blog/1, version/0, not_found/0]).

-define(KEY, {?MODULE, site}).
-define(TEMPLATES, [layout, home, blogs, blog_item, blog, version, not_found]).

load(Dir) ->
    try
        persistent_term:put(?KEY, site(Dir))
    catch
        throw:{content, Message} ->
            io:format(standard_error, "CONTENT_DIR=~ts: cannot load the portfolio content: ~ts "
                "(point CONTENT_DIR at targets/content)~n", [Dir, Message]),
            erlang:halt(2)
    end.

site(Dir) ->
    Templates = maps:from_list([
        {Name, read(filename:join([Dir, "templates", atom_to_list(Name) ++ ".html"]))}
     || Name <- ?TEMPLATES
    ]),
    [VersionLine | _] = binary:split(read(filename:join(Dir, "VERSION")), <<"\n">>),
    PostDir = filename:join(Dir, "posts"),
    Files =
        case file:list_dir(PostDir) of
            {ok, Names} -> Names;
            {error, Reason} -> throw({content, [PostDir, ": ", file:format_error(Reason)]})
        end,
    Posts = lists:sort([
        post(list_to_binary(filename:basename(F, ".md")), read(filename:join(PostDir, F)))
     || F <- Files, filename:extension(F) =:= ".md"
    ]),
    #{
        templates => Templates,
        version => string:trim(VersionLine),
        posts => Posts,
        by_id => maps:from_list([{Id, {Title, Html}} || {Id, Title, Html} <- Posts])
    }.

read(Path) ->
    case file:read_file(Path) of
        {ok, Bin} -> Bin;
        {error, Reason} -> throw({content, [Path, ": ", file:format_error(Reason)]})
    end.

%% {Id, Title, BodyHtml}: the first line is `# TITLE', the rest blocks separated by empty lines.
post(Id, Text) ->
    case binary:split(Text, <<"\n">>, [global]) of
        [<<"# ", Title/binary>> | Lines] ->
            {Id, Title, iolist_to_binary(blocks(Lines, [], []))};
        _ ->
            throw({content, ["posts/", Id, ".md: the first line must be \"# TITLE\""]})
    end.

blocks([], [], Out) -> lists:reverse(Out);
blocks([], Block, Out) -> blocks([], [], [block(lists:reverse(Block)) | Out]);
blocks([<<>> | Rest], [], Out) -> blocks(Rest, [], Out);
blocks([<<>> | Rest], Block, Out) -> blocks(Rest, [], [block(lists:reverse(Block)) | Out]);
blocks([Line | Rest], Block, Out) -> blocks(Rest, [Line | Block], Out).

block([<<"## ", Heading/binary>> | _]) ->
    [<<"<h2>">>, escape(Heading), <<"</h2>\n">>];
block([<<"- ", _/binary>> | _] = Items) ->
    [<<"<ul>\n">>, [[<<"<li>">>, escape(Item), <<"</li>\n">>] || <<"- ", Item/binary>> <- Items], <<"</ul>\n">>];
block(Lines) ->
    [<<"<p>">>, lists:join(<<"\n">>, [escape(L) || L <- Lines]), <<"</p>\n">>].

escape(Bin) ->
    <<<<(escape_char(C))/binary>> || <<C>> <= Bin>>.

escape_char($&) -> <<"&amp;">>;
escape_char($<) -> <<"&lt;">>;
escape_char($>) -> <<"&gt;">>;
escape_char($") -> <<"&quot;">>;
escape_char($') -> <<"&#39;">>;
escape_char(C) -> <<C>>.

%% Replaces each `{{name}}' in turn: content never contains `{{', so this is exact.
fill(Template, Values) ->
    lists:foldl(
        fun({Name, Value}, Acc) ->
            binary:replace(Acc, <<"{{", Name/binary, "}}">>, Value, [global])
        end,
        Template,
        Values
    ).

page(Title, Main) ->
    #{templates := #{layout := Layout}} = persistent_term:get(?KEY),
    fill(Layout, [{<<"title">>, escape(Title)}, {<<"main">>, Main}]).

template(Name) ->
    #{templates := #{Name := Template}} = persistent_term:get(?KEY),
    Template.

home() -> page(<<"Home">>, template(home)).

blogs() ->
    #{posts := Posts} = persistent_term:get(?KEY),
    Item = template(blog_item),
    Items = [fill(Item, [{<<"id">>, Id}, {<<"title">>, escape(Title)}]) || {Id, Title, _} <- Posts],
    page(<<"Blogs">>, fill(template(blogs), [{<<"items">>, iolist_to_binary(Items)}])).

%% {ok, Page} for a known post id, error otherwise.
blog(Id) ->
    #{by_id := ById} = persistent_term:get(?KEY),
    case ById of
        #{Id := {Title, Html}} ->
            {ok, page(Title, fill(template(blog), [{<<"title">>, escape(Title)}, {<<"body">>, Html}]))};
        _ ->
            error
    end.

version() ->
    #{version := Version} = persistent_term:get(?KEY),
    page(<<"Version">>, fill(template(version), [{<<"version">>, escape(Version)}])).

not_found() -> page(<<"Not Found">>, template(not_found)).
