#!/usr/bin/env python3
"""Generates smart-speaker commands and everyday sentences from our own templates and word lists.

Output: one sentence per line, lowercase, numbers spelled out, only the characters of the model's
vocabulary (a-z, space, apostrophe). Standard library only, deterministic for a given --seed.

    text_gen.py --count 20000 --seed 1 > train.txt
    text_gen.py --count 300 --seed 2 --exclude train.txt > test.txt   (no sentence of train.txt)
"""
import argparse
import random
import re
import sys

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " \
       "fifteen sixteen seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh",
            8: "eighth", 9: "ninth", 10: "tenth", 11: "eleventh", 12: "twelfth", 13: "thirteenth",
            20: "twentieth", 30: "thirtieth"}


def number_words(n):
    """Cardinal number in words, 0 <= n < 1,000,000."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + number_words(rest))
    rest = n % 1000
    return number_words(n // 1000) + " thousand" + ("" if rest == 0 else " " + number_words(rest))


def ordinal_words(n):
    if n in ORDINALS:
        return ORDINALS[n]
    if n < 20:
        return ONES[n] + "th"
    tens, ones = divmod(n, 10)
    if ones == 0:
        return TENS[tens][:-1] + "ieth"
    return TENS[tens] + " " + ordinal_words(ones)


def time_words(rng):
    hour = rng.randint(1, 12)
    minute = rng.choice([0, 0, 5, 10, 15, 20, 25, 30, 30, 40, 45, 50, 55, rng.randint(1, 59)])
    period = rng.choice(["", "", " a m", " p m", " in the morning", " in the evening", " at night",
                         " in the afternoon"])
    if minute == 0:
        spoken = rng.choice([number_words(hour), number_words(hour) + " o'clock"])
    elif minute == 15 and rng.random() < 0.4:
        spoken = "quarter past " + number_words(hour)
    elif minute == 30 and rng.random() < 0.4:
        spoken = "half past " + number_words(hour)
    elif minute < 10:
        spoken = number_words(hour) + " oh " + number_words(minute)
    else:
        spoken = number_words(hour) + " " + number_words(minute)
    return spoken + period


def duration_words(rng):
    unit = rng.choice(["second", "minute", "minute", "minute", "hour"])
    amount = rng.choice([1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 45, 90, rng.randint(1, 120)])
    if amount == 1:
        words = rng.choice(["one " + unit, "a " + unit])
    else:
        words = number_words(amount) + " " + unit + "s"
    if unit == "hour" and rng.random() < 0.3:
        words += " and " + number_words(rng.choice([10, 15, 20, 30, 45])) + " minutes"
    if unit == "minute" and rng.random() < 0.15:
        words = rng.choice(["half an hour", "an hour and a half", "a minute and a half"])
    return words


ARTIST_LIST = """the beatles|queen|adele|taylor swift|ed sheeran|beyonce|drake|rihanna|coldplay|
the rolling stones|pink floyd|led zeppelin|madonna|elton john|billie eilish|bruno mars|lady gaga|
shakira|bob marley|miles davis|john coltrane|ella fitzgerald|frank sinatra|nina simone|johnny cash|
dolly parton|willie nelson|the weeknd|kendrick lamar|eminem|nirvana|radiohead|metallica|abba|bach|
mozart|beethoven|chopin|vivaldi|the killers|arctic monkeys|daft punk|fleetwood mac|stevie wonder|
aretha franklin|whitney houston|prince|david bowie|u two|the cure|green day|foo fighters|
red hot chili peppers|post malone|dua lipa|harry styles|ariana grande|justin bieber|katy perry|
bon jovi|bruce springsteen|norah jones|louis armstrong|ray charles|the doors|oasis|blur|the clash|
sade|enya|bjork|lorde|sia|khalid|lizzo"""
ARTISTS = [a.strip() for a in ARTIST_LIST.replace("\n", "").split("|")]
SONGS = [s.strip() for s in """yesterday|let it be|hey jude|bohemian rhapsody|don't stop me now|
hello|rolling in the deep|shake it off|love story|shape of you|perfect|halo|crazy in love|
umbrella|yellow|fix you|paint it black|wish you were here|stairway to heaven|like a prayer|
rocket man|your song|bad guy|uptown funk|poker face|hips don't lie|three little birds|
so what|my way|fly me to the moon|feeling good|ring of fire|jolene|blinding lights|humble|
lose yourself|smells like teen spirit|creep|enter sandman|dancing queen|mamma mia|
mr brightside|do i wanna know|get lucky|dreams|superstition|respect|i will always love you|
purple rain|heroes|space oddity|friday i'm in love|basket case|everlong|californication|
levitating|watermelon sugar|thank u next|baby|roar|livin' on a prayer|born to run|
don't know why|what a wonderful world|hit the road jack|light my fire|wonderwall|
song two|london calling|smooth operator|only time|royals|chandelier|good as hell|
happy birthday|twinkle twinkle little star|the wheels on the bus|jingle bells|
here comes the sun|hotel california|sweet child o' mine|billie jean|thriller|imagine|
hallelujah|someone like you|river|hurt|all of me|take on me|africa|september""".replace(
    "\n", "").split("|")]
GENRES = [g for g in """jazz|rock|pop|classical music|country music|hip hop|blues|reggae|
folk music|lo fi beats|relaxing music|dance music|piano music|rain sounds|white noise|
ocean sounds|christmas music|eighties music|nineties hits|workout music|sleep sounds|
heavy metal|soul music|something upbeat|something relaxing|my favorites|my playlist|
my morning playlist|the top forty|indie rock|children's songs|audiobooks""".replace(
    "\n", "").split("|")]
ROOMS = ["kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway",
         "dining room", "basement", "attic", "kids' room", "guest room", "porch", "garden",
         "nursery", "laundry room", "study", "upstairs", "downstairs", "front yard", "backyard"]
DEVICES = ["lights", "light", "lamp", "ceiling light", "fan", "heater", "air conditioner", "tv",
           "television", "speaker", "coffee maker", "kettle", "dishwasher", "washing machine",
           "dryer", "oven", "radio", "plug", "fairy lights", "floor lamp", "desk lamp",
           "humidifier", "vacuum", "robot vacuum", "sprinklers", "heating", "blinds", "curtains"]
COLORS = ["red", "blue", "green", "yellow", "orange", "purple", "pink", "white", "warm white",
          "cool white", "teal", "violet", "gold"]
PLACES = [p for p in """london|paris|new york|tokyo|berlin|madrid|rome|chicago|boston|seattle|
san francisco|los angeles|toronto|sydney|dublin|edinburgh|manchester|amsterdam|vienna|prague|
mumbai|delhi|beijing|seoul|cairo|nairobi|lagos|mexico city|rio de janeiro|buenos aires|
denver|austin|miami|atlanta|phoenix|portland|vancouver|montreal|oslo|stockholm|helsinki|
lisbon|athens|istanbul|moscow|singapore|bangkok|hong kong|cape town|auckland|glasgow|
cardiff|belfast|bristol|leeds|liverpool|brooklyn|texas|california|florida|scotland|
the office|home|work|school|the airport|the station|grandma's house""".replace(
    "\n", "").split("|")]
NAMES = ["mom", "dad", "john", "mary", "james", "sarah", "michael", "emma", "david", "olivia",
         "daniel", "sophia", "grandma", "grandpa", "alex", "chris", "sam", "jessica", "peter",
         "laura", "kevin", "anna", "tom", "lucy", "mark", "rachel", "ben", "kate", "paul", "maria",
         "the doctor", "the office", "my wife", "my husband", "my sister", "my brother",
         "aunt jane", "uncle bob", "jack", "emily", "noah", "ava", "liam", "mia", "lily", "oscar"]
ITEMS = ["milk", "eggs", "bread", "butter", "cheese", "apples", "bananas", "oranges", "coffee",
         "tea", "sugar", "rice", "pasta", "tomatoes", "potatoes", "onions", "garlic", "chicken",
         "fish", "yogurt", "orange juice", "cereal", "flour", "olive oil", "salt", "pepper",
         "toilet paper", "dish soap", "shampoo", "toothpaste", "batteries", "light bulbs",
         "dog food", "cat food", "paper towels", "carrots", "lettuce", "strawberries", "honey",
         "peanut butter", "jam", "beans", "soup", "ice cream", "chocolate", "cookies", "water"]
LISTS = ["shopping list", "grocery list", "to do list", "packing list", "list"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
WHEN = ["today", "tomorrow", "tonight", "this morning", "this afternoon", "this evening",
        "this weekend", "next week", "right now", "later today", "on monday", "on friday",
        "tomorrow morning", "on the weekend"]
WAKE = ["", "", "", "", "hey computer ", "okay computer ", "computer ", "hey speaker "]
POLITE = ["", "", "", "please ", "can you ", "could you ", "would you ", "i want you to "]
TAIL = ["", "", "", "", " please", " now", " for me", " thanks"]
APPS = ["spotify", "the radio", "youtube", "my library", "the app"]
SUBJECTS = ["the cat", "my neighbor", "the old man", "a little girl", "the teacher", "our team",
            "the train", "my friend", "the weather", "the children", "the dog", "my boss",
            "the river", "the music", "her brother", "the city", "the doctor", "everyone",
            "nobody", "the baker", "the children next door", "the bus driver", "my family"]
VERBS = ["wanted to", "decided to", "forgot to", "tried to", "promised to", "never learned to",
         "started to", "hoped to", "refused to", "used to", "seemed to", "had to", "would like to"]
ACTIONS = ["go home early", "read a book", "call her mother", "cook dinner", "buy a new car",
           "walk to the park", "finish the report", "paint the fence", "fix the old clock",
           "learn the piano", "visit the museum", "clean the house", "plant some flowers",
           "write a letter", "catch the last train", "watch the game", "bake a cake",
           "climb the hill", "sing a song", "take a long nap", "answer the phone",
           "open the window", "leave the door open", "feed the birds", "wash the dishes",
           "study for the exam", "find the keys", "count the stars", "carry the boxes upstairs"]
REASONS = ["because it was raining", "before the sun went down", "after the meeting",
           "when the bell rang", "but it was too late", "and everyone laughed",
           "although nobody asked", "while the kettle boiled", "since it was sunday",
           "so they could rest", "as soon as possible", "without saying a word",
           "in the middle of the night", "on a cold winter morning", "until the very end",
           "for the first time in years", "with great care", "at the end of the day"]
ADJ = ["quiet", "busy", "happy", "tired", "bright", "dark", "warm", "cold", "strange", "lovely",
       "small", "large", "old", "new", "beautiful", "noisy", "simple", "difficult", "early",
       "late", "careful", "honest", "ill disposed", "respectable", "amiable", "selfish", "kind"]
NOUNS = ["house", "garden", "street", "letter", "story", "window", "kitchen", "morning",
         "evening", "journey", "village", "family", "question", "answer", "problem", "idea",
         "dinner", "holiday", "book", "song", "picture", "road", "friend", "stranger", "fortune"]
QUESTIONS = ["what time is it", "what's the time", "what day is it today", "what's the date",
             "how are you", "who are you", "what can you do", "tell me a joke",
             "tell me something interesting", "what's on my calendar {when}",
             "do i have any meetings {when}", "how far is {place}", "how long does it take to get to {place}",
             "what's the traffic like to {place}", "what's the population of {place}",
             "what time is it in {place}", "who wrote {song}", "who sings {song}",
             "how many {unit}s are in a {bigunit}", "what's {a} plus {b}", "what's {a} times {b}",
             "what is {a} minus {b}", "how do you spell {word}", "what does {word} mean",
             "how tall is mount everest", "when does the sun set {when}", "when is sunrise {when}",
             "is it a holiday {when}", "how old is {artist}", "what's the news",
             "what's the score of the game", "who won the game last night",
             "how many days until {month}", "what's the capital of {place}",
             "how do i make pancakes", "how long should i boil an egg", "what should i cook for dinner",
             "where is my phone", "did i lock the front door", "is the {room} {device} on",
             "what's the temperature in the {room}", "are there any new messages",
             "what's on my {list}", "when is my next alarm", "how much time is left on my timer",
             "what's the {ordinal} day of {month}", "why is the sky blue",
             "how many ounces in a cup", "what's the exchange rate for the dollar"]


def fill(template, rng):
    values = {
        "artist": rng.choice(ARTISTS), "song": rng.choice(SONGS), "genre": rng.choice(GENRES),
        "room": rng.choice(ROOMS), "device": rng.choice(DEVICES), "color": rng.choice(COLORS),
        "place": rng.choice(PLACES), "name": rng.choice(NAMES), "item": rng.choice(ITEMS),
        "item2": rng.choice(ITEMS), "list": rng.choice(LISTS), "weekday": rng.choice(WEEKDAYS),
        "month": rng.choice(MONTHS), "when": rng.choice(WHEN), "time": time_words(rng),
        "duration": duration_words(rng), "app": rng.choice(APPS),
        "percent": number_words(rng.choice([10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90, 100,
                                            rng.randint(1, 100)])),
        "level": number_words(rng.randint(0, 10)),
        "degrees": number_words(rng.randint(15, 80)),
        "a": number_words(rng.randint(0, 100)), "b": number_words(rng.randint(0, 100)),
        "count": number_words(rng.randint(2, 12)),
        "ordinal": ordinal_words(rng.randint(1, 31)),
        "unit": rng.choice(["second", "minute", "hour", "day", "week", "inch", "ounce"]),
        "bigunit": rng.choice(["minute", "hour", "day", "week", "year", "foot", "pound"]),
        "word": rng.choice(NOUNS + ADJ[:20]),
        "adj": rng.choice(ADJ), "noun": rng.choice(NOUNS), "subject": rng.choice(SUBJECTS),
        "verb": rng.choice(VERBS), "action": rng.choice(ACTIONS), "reason": rng.choice(REASONS),
        "year": number_words(rng.randint(19, 20)) + " " + number_words(rng.randint(10, 99)),
        "phone": " ".join(ONES[rng.randint(0, 9)] for _ in range(rng.choice([3, 4, 7, 10]))),
    }
    return template.format(**values)


COMMANDS = {
    "music": ["play {song} by {artist}", "play {artist}", "play some {genre}", "play {genre}",
              "play {song}", "put on some {genre}", "play music by {artist}",
              "play the latest album by {artist}", "play {song} on {app}", "i want to hear {song}",
              "shuffle songs by {artist}", "play my {genre} playlist", "play the radio",
              "play {artist} in the {room}", "add this song to my playlist", "who sings this song",
              "what song is this", "play something by {artist}", "play {genre} in the {room}",
              "play the song {song}", "listen to {artist}", "start my playlist"],
    "playback": ["pause", "stop", "resume", "next song", "skip this song", "previous song",
                 "play it again", "repeat this song", "turn it up", "turn it down",
                 "volume up", "volume down", "set the volume to {level}", "volume {level}",
                 "mute", "unmute", "louder", "quieter", "stop the music", "pause the music",
                 "turn the volume up a little", "turn the volume down to {level}",
                 "skip forward {duration}", "go back {duration}", "shuffle", "stop playing",
                 "set volume to {percent} percent", "play the next episode", "keep going"],
    "timers": ["set a timer for {duration}", "set a {duration} timer",
               "start a timer for {duration}", "cancel the timer", "stop the timer",
               "how much time is left", "set an alarm for {time}", "wake me up at {time}",
               "set an alarm for {time} {when}", "cancel my alarm for {time}",
               "snooze", "snooze for {duration}", "remind me to {action} at {time}",
               "remind me in {duration} to {action}", "remind me {when} to {action}",
               "set a reminder for {time}", "turn off the alarm", "delete all alarms",
               "set a timer called pasta for {duration}", "add {duration} to the timer",
               "set an alarm every {weekday} at {time}", "wake me up in {duration}"],
    "weather": ["what's the weather", "what's the weather like {when}",
                "what's the weather in {place}", "what's the weather in {place} {when}",
                "will it rain {when}", "is it going to snow {when}", "do i need an umbrella {when}",
                "how hot is it outside", "what's the temperature outside",
                "what's the forecast for {when}", "how cold will it be {when}",
                "is it windy in {place}", "what's the forecast in {place} this week",
                "will it be sunny on {weekday}", "what's the humidity", "is it raining in {place}"],
    "home": ["turn on the {room} {device}", "turn off the {room} {device}",
             "turn on the {device}", "turn off the {device}", "switch on the {device} in the {room}",
             "switch off the {device} in the {room}", "dim the {room} lights",
             "dim the lights to {percent} percent", "set the {room} lights to {percent} percent",
             "make the lights {color}", "change the {room} lights to {color}",
             "brighten the lights", "turn all the lights off", "turn everything off",
             "set the thermostat to {degrees} degrees", "set the {room} to {degrees} degrees",
             "make it warmer", "make it cooler", "turn up the heat", "turn down the heat",
             "what's the thermostat set to", "lock the front door", "unlock the front door",
             "lock the back door", "is the garage door open", "close the garage door",
             "open the garage door", "open the {room} blinds", "close the curtains in the {room}",
             "start the {device}", "stop the {device}", "turn the {device} up",
             "set the fan to speed {level}", "turn the {room} {device} on for {duration}",
             "show me the front door camera", "arm the alarm system", "disarm the alarm"],
    "lists": ["add {item} to my {list}", "add {item} and {item2} to my {list}",
              "put {item} on the {list}", "remove {item} from my {list}",
              "what's on my {list}", "clear my {list}", "read my {list}",
              "do i have {item} on my list", "i need {item}", "we're out of {item}",
              "add {count} {item} to the list", "create a new list called {noun}"],
    "calls": ["call {name}", "call {name} on speaker", "phone {name}", "video call {name}",
              "send a message to {name}", "text {name} that i'm running late",
              "tell {name} i'll be home at {time}", "send {name} a message saying {action}",
              "read my messages", "do i have any new messages", "reply to {name}",
              "call {phone}", "dial {phone}", "hang up", "answer the call", "redial",
              "send an email to {name}", "text {name} good night", "drop in on the {room}",
              "announce dinner is ready", "message {name} i love you", "call {name} back"],
    "questions": QUESTIONS,
    "misc": ["yes", "no", "okay", "cancel", "never mind", "thank you", "thanks", "good morning",
             "good night", "stop", "help", "what", "repeat that", "say that again", "go back",
             "open {app}", "set my location to {place}", "turn on do not disturb",
             "turn off do not disturb", "what's my day like", "start my morning routine",
             "i'm leaving", "i'm home", "good night everyone", "order more {item}",
             "where is my package", "track my order", "book a table for {count} at {time}",
             "find a restaurant near me", "navigate to {place}", "how do i get to {place}",
             "call a taxi to {place}", "spell {word}", "flip a coin", "roll a dice",
             "pick a number between one and {a}", "count to {count}", "sing a song",
             "tell me a story", "what's {a} divided by {b}", "convert {a} miles to kilometers",
             "translate hello into french", "set a bedtime for {time}", "read me the news"],
}
GENERAL = ["{subject} {verb} {action} {reason}", "{subject} {verb} {action}",
           "it was a {adj} {noun} {reason}", "the {noun} was {adj} and {adj}",
           "i think {subject} {verb} {action}", "we should {action} {when}",
           "have you seen the {adj} {noun}", "{subject} said the {noun} was {adj}",
           "there is a {adj} {noun} near the {noun}", "on {weekday} {subject} {verb} {action}",
           "in {month} {subject} {verb} {action}", "my {noun} is {adj} {when}",
           "do you know why {subject} {verb} {action}", "it takes {duration} to {action}",
           "at {time} {subject} {verb} {action}", "the {ordinal} {noun} was {adj}",
           "he was not a {adj} young man", "she might have been made {adj} herself",
           "{count} people came to the {noun} in {year}", "we will {action} {reason}",
           "{subject} lives in {place}", "{subject} moved to {place} in {year}",
           "i'd like to {action} {when}", "they couldn't {action} {reason}",
           "the {adj} {noun} and the {adj} {noun}", "nobody knew how much there might be"]


def sentence(rng):
    if rng.random() < 0.28:
        text = fill(rng.choice(GENERAL), rng)
    else:
        category = rng.choice(list(COMMANDS))
        text = fill(rng.choice(COMMANDS[category]), rng)
        text = rng.choice(WAKE) + rng.choice(POLITE) + text + rng.choice(TAIL) \
            if category not in ("questions",) else rng.choice(WAKE) + text
    return normalize(text)


def normalize(text):
    text = text.lower().replace("-", " ")
    text = re.sub(r"[^a-z' ]", "", text)
    return re.sub(r" +", " ", text).strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--exclude", help="file of sentences that must not be produced")
    args = parser.parse_args()
    excluded = set()
    if args.exclude:
        with open(args.exclude) as f:
            excluded = {line.strip() for line in f}
    rng = random.Random(args.seed)
    produced, attempts = 0, 0
    while produced < args.count and attempts < args.count * 50:
        attempts += 1
        text = sentence(rng)
        if text and text not in excluded:
            sys.stdout.write(text + "\n")
            produced += 1
            if args.exclude:
                excluded.add(text)


if __name__ == "__main__":
    main()
